# Planted bug: the reference solution of 18_lora_merge that scales the update by alpha instead of alpha / r.
# course-llm exercise: 18_lora_merge
# expect-fail: update_scaled_by_alpha_over_r merged_weight
# expect-hint: not by alpha alone
import torch


def lora_forward(x, weight, bias, A, B, alpha):
    h = x @ weight.T + alpha * (x @ A.T) @ B.T                              # BUG: alpha, not alpha / r
    return h if bias is None else h + bias


def lora_merge(weight, A, B, alpha):
    return weight + alpha * B @ A                                          # BUG: alpha, not alpha / r

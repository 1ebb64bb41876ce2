# Planted bug: the reference solution of 18_lora_merge that takes the rank from A.shape[1] (the input features).
# course-llm exercise: 18_lora_merge
# expect-fail: update_scaled_by_alpha_over_r merged_weight
# expect-hint: not by alpha / in_features
import torch


def lora_forward(x, weight, bias, A, B, alpha):
    r = A.shape[1]                                                         # BUG: in_features, not r
    h = x @ weight.T + alpha / r * (x @ A.T) @ B.T
    return h if bias is None else h + bias


def lora_merge(weight, A, B, alpha):
    return weight + alpha / A.shape[1] * B @ A                             # BUG: in_features, not r

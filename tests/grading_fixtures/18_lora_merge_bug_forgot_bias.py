# Planted bug: the reference solution of 18_lora_merge that forgets the bias.
# course-llm exercise: 18_lora_merge
# expect-fail: update_starts_at_zero update_scaled_by_alpha_over_r batched_input merged_weight
# expect-hint: did you forget to add the bias
import torch


def lora_forward(x, weight, bias, A, B, alpha):
    r = A.shape[0]
    return x @ weight.T + alpha / r * (x @ A.T) @ B.T                      # BUG: no bias


def lora_merge(weight, A, B, alpha):
    return weight + alpha / A.shape[0] * B @ A

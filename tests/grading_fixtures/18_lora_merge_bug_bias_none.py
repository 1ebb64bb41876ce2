# Planted bug: the reference solution of 18_lora_merge that adds a bias of None.
# course-llm exercise: 18_lora_merge
# expect-fail: without_bias
# expect-hint: bias may be None
import torch


def lora_forward(x, weight, bias, A, B, alpha):
    r = A.shape[0]
    return x @ weight.T + bias + alpha / r * (x @ A.T) @ B.T               # BUG: bias may be None


def lora_merge(weight, A, B, alpha):
    return weight + alpha / A.shape[0] * B @ A

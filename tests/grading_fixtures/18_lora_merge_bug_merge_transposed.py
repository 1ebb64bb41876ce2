# Planted bug: the reference solution of 18_lora_merge that merges A^T B^T, the transpose of B A.
# course-llm exercise: 18_lora_merge
# expect-fail: merged_weight
# expect-hint: B @ A
import torch


def lora_forward(x, weight, bias, A, B, alpha):
    r = A.shape[0]
    h = x @ weight.T + alpha / r * (x @ A.T) @ B.T
    return h if bias is None else h + bias


def lora_merge(weight, A, B, alpha):
    return weight + alpha / A.shape[0] * A.T @ B.T                         # BUG: (in, out), transposed

# Planted bug: the reference solution of 18_lora_merge that uses torch.mm, which only takes 2-D inputs.
# course-llm exercise: 18_lora_merge
# expect-fail: batched_input
# expect-hint: not torch.mm
import torch


def lora_forward(x, weight, bias, A, B, alpha):
    r = A.shape[0]
    h = torch.mm(x, weight.T) + alpha / r * torch.mm(torch.mm(x, A.T), B.T)  # BUG: 2-D only
    return h if bias is None else h + bias


def lora_merge(weight, A, B, alpha):
    return weight + alpha / A.shape[0] * B @ A

# Planted bug: the reference solution of 03_grad_clipping that returns the norm after clipping
# (torch.nn.utils.clip_grad_norm_ returns the total norm before clipping, which the training log shows).
# course-llm exercise: 03_grad_clipping
# expect-fail: total_norm
# expect-hint: before clipping
import torch


def clip_gradients(grads, max_norm):
    norm = torch.sqrt(sum((g.double() ** 2).sum() for g in grads)).item()
    scale = min(1.0, max_norm / norm) if norm > 0 else 1.0
    return [g * scale for g in grads], norm * scale  # BUG: the norm before clipping is `norm`

# Planted bug: the reference solution of 03_grad_clipping clipping each tensor by its own norm.
# course-llm exercise: 03_grad_clipping
# expect-fail: clips_large_gradients
# expect-hint: one factor for all
import torch


def clip_gradients(grads, max_norm):
    norm = torch.sqrt(sum((g.double() ** 2).sum() for g in grads)).item()
    out = []
    for g in grads:  # BUG: one factor per tensor instead of one for all
        n = g.norm().item()
        out.append(g * min(1.0, max_norm / n) if n > 0 else g.clone())
    return out, norm

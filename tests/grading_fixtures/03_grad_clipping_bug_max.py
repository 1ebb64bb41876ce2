# Planted bug: the reference solution of 03_grad_clipping with max(1, v/||g||), as misprinted in the deck.
# course-llm exercise: 03_grad_clipping
# expect-fail: clips_large_gradients keeps_small_gradients
# expect-hint: not max
import torch


def clip_gradients(grads, max_norm):
    norm = torch.sqrt(sum((g.double() ** 2).sum() for g in grads)).item()
    scale = max(1.0, max_norm / norm) if norm > 0 else 1.0  # BUG: min, not max
    return [g * scale for g in grads], norm

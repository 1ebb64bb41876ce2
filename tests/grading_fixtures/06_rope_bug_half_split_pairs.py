# Planted bug: the reference solution of 06_rope pairing coordinate i with i + d/2 (Hugging Face's
# layout) instead of the lecture's neighbouring pairs (2i, 2i+1).
# course-llm exercise: 06_rope
# expect-fail: equals_rotation_matrix uses_the_base scores_depend_on_relative_position
# expect-hint: half-split layout
import torch


def apply_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    angle = positions.to(torch.float64)[:, None] * theta
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
    x0, x1 = x[..., : d // 2], x[..., d // 2:]  # BUG: pairs (i, i + d/2)
    return torch.cat([x0 * cos - x1 * sin, x0 * sin + x1 * cos], dim=-1)

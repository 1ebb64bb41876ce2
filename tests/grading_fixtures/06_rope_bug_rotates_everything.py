# Planted bug: the reference solution of 06_rope that rotates all d coordinates (the book's
# full RoPE) instead of the first rotary_dim; right only when rotary_dim = d.
# course-llm exercise: 06_rope
# expect-fail: equals_rotation_matrix full_rotary_dim uses_the_base scores_depend_on_relative_position
# expect-hint: you rotated every coordinate
import torch


def apply_partial_rope(x, positions, rotary_dim, base=10000.0):
    r = rotary_dim
    r = x.shape[-1]  # BUG: ignores rotary_dim
    theta = base ** (-torch.arange(0, r, 2, dtype=torch.float64) / r)
    angle = positions.to(torch.float64)[:, None] * theta
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
    x0, x1 = x[..., 0:r:2], x[..., 1:r:2]
    rotated = torch.stack([x0 * cos - x1 * sin, x0 * sin + x1 * cos], dim=-1)
    return torch.cat([rotated.flatten(-2), x[..., r:]], dim=-1)

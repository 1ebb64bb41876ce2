# Planted bug: the reference solution of 06_rope that rotates by -angle (the sines' signs swapped).
# course-llm exercise: 06_rope
# expect-fail: equals_rotation_matrix full_rotary_dim uses_the_base scores_depend_on_relative_position
# expect-hint: rotated by -angle
import torch


def apply_partial_rope(x, positions, rotary_dim, base=10000.0):
    r = rotary_dim
    theta = base ** (-torch.arange(0, r, 2, dtype=torch.float64) / r)
    angle = positions.to(torch.float64)[:, None] * theta
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
    x0, x1 = x[..., 0:r:2], x[..., 1:r:2]
    rotated = torch.stack([x0 * cos + x1 * sin, -x0 * sin + x1 * cos], dim=-1)  # BUG: R^T
    return torch.cat([rotated.flatten(-2), x[..., r:]], dim=-1)

# Planted bug: the reference solution of 06_rope with the sign of the sines flipped: every pair turns
# by -angle (clockwise) instead of +angle.
# course-llm exercise: 06_rope
# expect-fail: equals_rotation_matrix uses_the_base scores_depend_on_relative_position
# expect-hint: rotated by -angle
import torch


def apply_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    angle = positions.to(torch.float64)[:, None] * theta
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
    x0, x1 = x[..., 0::2], x[..., 1::2]
    return torch.stack([x0 * cos + x1 * sin, -x0 * sin + x1 * cos], dim=-1).flatten(-2)  # BUG: signs

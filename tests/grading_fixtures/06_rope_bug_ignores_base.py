# Planted bug: the reference solution of 06_rope that always uses base 10000.
# course-llm exercise: 06_rope
# expect-fail: uses_the_base
# expect-hint: use the `base` argument
import torch


def apply_partial_rope(x, positions, rotary_dim, base=10000.0):
    r = rotary_dim
    theta = 10000.0 ** (-torch.arange(0, r, 2, dtype=torch.float64) / r)  # BUG: not base
    angle = positions.to(torch.float64)[:, None] * theta
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
    x0, x1 = x[..., 0:r:2], x[..., 1:r:2]
    rotated = torch.stack([x0 * cos - x1 * sin, x0 * sin + x1 * cos], dim=-1)
    return torch.cat([rotated.flatten(-2), x[..., r:]], dim=-1)

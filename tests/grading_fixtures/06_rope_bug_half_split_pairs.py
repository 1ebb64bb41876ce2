# Planted bug: the reference solution of 06_rope that pairs coordinate i with i + rotary_dim/2 (the
# half-split layout of Hugging Face's Llama) instead of the neighbours (2i, 2i+1).
# course-llm exercise: 06_rope
# expect-fail: equals_rotation_matrix full_rotary_dim uses_the_base scores_depend_on_relative_position
# expect-hint: half-split layout
import torch


def apply_partial_rope(x, positions, rotary_dim, base=10000.0):
    r = rotary_dim
    theta = base ** (-torch.arange(0, r, 2, dtype=torch.float64) / r)
    angle = positions.to(torch.float64)[:, None] * theta
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
    x0, x1 = x[..., : r // 2], x[..., r // 2 : r]  # BUG: half-split pairs
    rotated = torch.cat([x0 * cos - x1 * sin, x0 * sin + x1 * cos], dim=-1)
    return torch.cat([rotated, x[..., r:]], dim=-1)

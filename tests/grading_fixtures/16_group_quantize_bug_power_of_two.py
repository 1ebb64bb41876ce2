# Planted bug: the reference solution of 16_group_quantize with Q = 2**(bits-1) instead of 2**(bits-1) - 1.
# course-llm exercise: 16_group_quantize
# expect-fail: scales_per_group codes four_bits
# expect-hint: the largest code is Q = 2**(bits-1) - 1
import torch


def group_dequantize(codes, scales, group_size):
    return codes.float() * scales.repeat_interleave(group_size, dim=1)


def group_quantize(w, bits, group_size):
    out_f, in_f = w.shape
    top = 2 ** (bits - 1)                                                  # BUG: one level too many
    g = w.reshape(out_f, in_f // group_size, group_size)
    scales = g.abs().amax(-1) / top
    safe = torch.where(scales > 0, scales, torch.ones_like(scales))
    codes = torch.round(g / safe[..., None]).clamp(-top, top)
    return codes.to(torch.int32).reshape(out_f, in_f), scales

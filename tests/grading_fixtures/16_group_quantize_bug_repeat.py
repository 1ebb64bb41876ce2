# Planted bug: the reference solution of 16_group_quantize that tiles the scales instead of repeating each.
# course-llm exercise: 16_group_quantize
# expect-fail: dequantize
# expect-hint: repeat_interleave, not repeat
import torch


def group_quantize(w, bits, group_size):
    out_f, in_f = w.shape
    top = 2 ** (bits - 1) - 1
    g = w.reshape(out_f, in_f // group_size, group_size)
    scales = g.abs().amax(-1) / top
    safe = torch.where(scales > 0, scales, torch.ones_like(scales))
    codes = torch.round(g / safe[..., None]).clamp(-top, top)
    return codes.to(torch.int32).reshape(out_f, in_f), scales


def group_dequantize(codes, scales, group_size):
    return codes.float() * scales.repeat(1, group_size)                   # BUG: tiles the scales

# Planted bug: the reference solution of 16_group_quantize dividing 0 by a zero scale.
# course-llm exercise: 16_group_quantize
# expect-fail: all_zero_group
# expect-hint: codes 0 instead of dividing 0 by 0
import torch


def group_dequantize(codes, scales, group_size):
    return codes.float() * scales.repeat_interleave(group_size, dim=1)


def group_quantize(w, bits, group_size):
    out_f, in_f = w.shape
    top = 2 ** (bits - 1) - 1
    g = w.reshape(out_f, in_f // group_size, group_size)
    scales = g.abs().amax(-1) / top
    codes = torch.round(g / scales[..., None]).clamp(-top, top)            # BUG: 0 / 0 = NaN
    return codes.reshape(out_f, in_f), scales

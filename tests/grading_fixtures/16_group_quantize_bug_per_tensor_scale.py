# Planted bug: the reference solution of 16_group_quantize with one scale for the whole tensor.
# course-llm exercise: 16_group_quantize
# expect-fail: scales_per_group codes four_bits
# expect-hint: one scale for the whole tensor
import torch


def group_dequantize(codes, scales, group_size):
    return codes.float() * scales.repeat_interleave(group_size, dim=1)


def group_quantize(w, bits, group_size):
    top = 2 ** (bits - 1) - 1
    n_groups = w.size(1) // group_size
    scales = (w.abs().max() / top).expand(w.size(0), n_groups).clone()    # BUG: per tensor
    codes = torch.round(w / scales.repeat_interleave(group_size, dim=1)).clamp(-top, top)
    return codes.to(torch.int32), scales

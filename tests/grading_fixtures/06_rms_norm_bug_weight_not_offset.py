# Planted bug: the reference solution of 06_rms_norm scaling by weight itself (the book's RMSNorm) instead of 1 + weight.
# course-llm exercise: 06_rms_norm
# expect-fail: values keeps_the_mean epsilon_inside_the_root float16_computed_in_float32
# expect-hint: multiply by (1 + weight)
import torch


def rms_norm(x, weight, eps=1e-6):
    x32 = x.float()
    normed = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)
    return (normed * weight.float()).to(x.dtype)  # BUG: the scale is 1 + weight

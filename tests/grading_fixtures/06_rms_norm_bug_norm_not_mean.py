# Planted bug: the reference solution of 06_rms_norm with the slide's ||x||^2 (sum of squares) instead of the mean square.
# course-llm exercise: 06_rms_norm
# expect-fail: values keeps_the_mean epsilon_inside_the_root float16_computed_in_float32
# expect-hint: divided by the norm
import torch


def rms_norm(x, weight, eps=1e-6):
    x32 = x.float()
    normed = x32 * torch.rsqrt(x32.pow(2).sum(-1, keepdim=True) + eps)  # BUG: sum, not mean
    return (normed * (1.0 + weight.float())).to(x.dtype)

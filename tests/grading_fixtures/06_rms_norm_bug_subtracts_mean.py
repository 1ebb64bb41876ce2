# Planted bug: the reference solution of 06_rms_norm that centres x first, as LayerNorm does (changes every output).
# course-llm exercise: 06_rms_norm
# expect-fail: values keeps_the_mean epsilon_inside_the_root float16_computed_in_float32
# expect-hint: you subtracted the mean
import torch


def rms_norm(x, weight, eps=1e-6):
    x32 = x.float()
    x32 = x32 - x32.mean(-1, keepdim=True)  # BUG: RMSNorm does not subtract the mean
    normed = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)
    return (normed * (1.0 + weight.float())).to(x.dtype)

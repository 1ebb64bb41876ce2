# Planted bug: the reference solution of 06_rms_norm computing in x's own dtype (float16 squares overflow).
# course-llm exercise: 06_rms_norm
# expect-fail: float16_computed_in_float32
# expect-hint: compute in float32
import torch


def rms_norm(x, weight, eps=1e-6):
    normed = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)  # BUG: stays in float16
    return normed * (1.0 + weight)

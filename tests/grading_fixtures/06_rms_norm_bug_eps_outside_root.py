# Planted bug: the reference solution of 06_rms_norm that adds eps to the root instead of under it.
# course-llm exercise: 06_rms_norm
# expect-fail: epsilon_inside_the_root
# expect-hint: eps goes inside the square root
import torch


def rms_norm(x, weight, eps=1e-6):
    x32 = x.float()
    normed = x32 / (x32.pow(2).mean(-1, keepdim=True).sqrt() + eps)  # BUG: sqrt(mean) + eps
    return (normed * (1.0 + weight.float())).to(x.dtype)

# Planted bug: the reference solution of 06_rms_norm with the slide's ||x||^2 (sum of squares) instead of the mean square.
# course-llm exercise: 06_rms_norm
# expect-fail: values keeps_the_mean epsilon_inside_the_root
# expect-hint: divided by the norm
import torch


def rms_norm(x, gamma, eps=1e-6):
    return x * torch.rsqrt(x.pow(2).sum(-1, keepdim=True) + eps) * gamma  # BUG: sum, not mean

# Planted bug: the reference solution of 06_rms_norm that adds eps to the root instead of under it.
# course-llm exercise: 06_rms_norm
# expect-fail: epsilon_inside_the_root
# expect-hint: eps goes inside the square root
import torch


def rms_norm(x, gamma, eps=1e-6):
    return x / (x.pow(2).mean(-1, keepdim=True).sqrt() + eps) * gamma  # BUG: sqrt(mean + eps)

# Planted bug: the reference solution of 06_rms_norm that centres x first, as LayerNorm does (changes every output).
# course-llm exercise: 06_rms_norm
# expect-fail: values keeps_the_mean epsilon_inside_the_root
# expect-hint: you subtracted the mean
import torch


def rms_norm(x, gamma, eps=1e-6):
    x = x - x.mean(-1, keepdim=True)  # BUG: RMSNorm does not subtract the mean
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * gamma

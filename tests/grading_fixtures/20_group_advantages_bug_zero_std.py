# Planted bug: the reference solution of 20_group_advantages dividing by the bare std (0 / 0 on flat groups).
# course-llm exercise: 20_group_advantages
# expect-fail: unbiased_std per_group flat_group_zero
# expect-hint: plus eps = 1e-4
import torch


def group_advantages(rewards, group_size):
    r = rewards.reshape(-1, group_size)
    others = (r.sum(1, keepdim=True) - r) / (group_size - 1)
    adv = (r - others) / r.std(1, keepdim=True)                             # BUG: no eps, no 0 for flat
    return adv.reshape(rewards.shape)


def k3_kl(logprobs, ref_logprobs):
    d = ref_logprobs - logprobs
    return torch.exp(d) - d - 1

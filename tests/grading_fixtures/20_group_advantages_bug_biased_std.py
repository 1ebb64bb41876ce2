# Planted bug: the reference solution of 20_group_advantages with the biased (divide by G) std.
# course-llm exercise: 20_group_advantages
# expect-fail: unbiased_std per_group flat_group_zero
# expect-hint: UNBIASED std
import torch


def group_advantages(rewards, group_size):
    r = rewards.reshape(-1, group_size)
    std = r.std(1, unbiased=False, keepdim=True)                            # BUG: divides by G
    others = (r.sum(1, keepdim=True) - r) / (group_size - 1)
    adv = (r - others) / (std + 1e-4)
    flat = (r == r[:, :1]).all(1, keepdim=True)
    return adv.masked_fill(flat, 0.0).reshape(rewards.shape)


def k3_kl(logprobs, ref_logprobs):
    d = ref_logprobs - logprobs
    return torch.exp(d) - d - 1

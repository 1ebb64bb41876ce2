# Planted bug: the reference solution of 20_group_advantages with d = policy - reference in k3.
# course-llm exercise: 20_group_advantages
# expect-fail: k3_value
# expect-hint: the reference's log-probability minus the policy's
import torch


def group_advantages(rewards, group_size):
    r = rewards.reshape(-1, group_size)
    others = (r.sum(1, keepdim=True) - r) / (group_size - 1)
    adv = (r - others) / (r.std(1, keepdim=True) + 1e-4)
    flat = (r == r[:, :1]).all(1, keepdim=True)
    return adv.masked_fill(flat, 0.0).reshape(rewards.shape)


def k3_kl(logprobs, ref_logprobs):
    d = logprobs - ref_logprobs                                             # BUG: the wrong way round
    return torch.exp(d) - d - 1

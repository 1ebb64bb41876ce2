# Planted bug: the reference solution of 20_group_advantages averaging k3 instead of one value per token.
# course-llm exercise: 20_group_advantages
# expect-fail: k3_per_token k3_value
# expect-hint: do not sum or average
import torch


def group_advantages(rewards, group_size):
    r = rewards.reshape(-1, group_size)
    others = (r.sum(1, keepdim=True) - r) / (group_size - 1)
    adv = (r - others) / (r.std(1, keepdim=True) + 1e-4)
    flat = (r == r[:, :1]).all(1, keepdim=True)
    return adv.masked_fill(flat, 0.0).reshape(rewards.shape)


def k3_kl(logprobs, ref_logprobs):
    d = ref_logprobs - logprobs
    return (torch.exp(d) - d - 1).mean()                                    # BUG: one number, not (B, T)

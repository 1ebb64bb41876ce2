# Planted bug: the reference solution of 20_group_advantages with the group mean as the baseline
# (chapter 20's GRPO formula) instead of the mean of the other answers.
# course-llm exercise: 20_group_advantages
# expect-fail: unbiased_std per_group flat_group_zero
# expect-hint: the mean of the OTHER group_size - 1 answers
import torch


def group_advantages(rewards, group_size):
    r = rewards.reshape(-1, group_size)
    adv = (r - r.mean(1, keepdim=True)) / (r.std(1, keepdim=True) + 1e-4)  # BUG: includes itself
    flat = (r == r[:, :1]).all(1, keepdim=True)
    return adv.masked_fill(flat, 0.0).reshape(rewards.shape)


def k3_kl(logprobs, ref_logprobs):
    d = ref_logprobs - logprobs
    return torch.exp(d) - d - 1

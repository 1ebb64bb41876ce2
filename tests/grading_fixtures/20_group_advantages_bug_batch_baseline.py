# Planted bug: the reference solution of 20_group_advantages normalising over the whole batch.
# course-llm exercise: 20_group_advantages
# expect-fail: per_group flat_group_zero
# expect-hint: not of the whole batch
import torch


def group_advantages(rewards, group_size):
    others = (rewards.sum() - rewards) / (len(rewards) - 1)                 # BUG: not per group
    return (rewards - others) / (rewards.std() + 1e-4)


def k3_kl(logprobs, ref_logprobs):
    d = ref_logprobs - logprobs
    return torch.exp(d) - d - 1

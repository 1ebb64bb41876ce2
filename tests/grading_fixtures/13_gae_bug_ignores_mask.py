# Planted bug: the reference solution of 13_gae that ignores the mask: padded steps bootstrap the last real step
# and get nonzero advantages.
# course-llm exercise: 13_gae
# expect-fail: padding
# expect-hint: nothing flows back from the padding
import torch


def gae(rewards, values, gamma=1.0, lam=0.95, mask=None):
    T = rewards.shape[1]
    adv = torch.zeros_like(rewards)
    next_adv = torch.zeros_like(rewards[:, 0])
    for t in reversed(range(T)):
        next_value = values[:, t + 1] if t + 1 < T else torch.zeros_like(next_adv)
        delta = rewards[:, t] + gamma * next_value - values[:, t]
        next_adv = delta + gamma * lam * next_adv
        adv[:, t] = next_adv
    return adv, adv + values

# Planted bug: the reference solution of 13_gae with A_t = delta_t + lam * A_{t+1} (gamma forgotten in the
# recursion); right only when gamma = 1.
# course-llm exercise: 13_gae
# expect-fail: advantages returns lambda_limits padding
# expect-hint: gamma is missing from the recursion
import torch


def gae(rewards, values, gamma=1.0, lam=0.95, mask=None):
    mask = torch.ones_like(rewards) if mask is None else mask.to(rewards.dtype)
    values = values * mask
    T = rewards.shape[1]
    adv = torch.zeros_like(rewards)
    next_adv = torch.zeros_like(rewards[:, 0])
    for t in reversed(range(T)):
        next_value = values[:, t + 1] if t + 1 < T else torch.zeros_like(next_adv)
        delta = rewards[:, t] + gamma * next_value - values[:, t]
        next_adv = (delta + lam * next_adv) * mask[:, t]
        adv[:, t] = next_adv
    return adv, (adv + values) * mask

# Planted bug: the reference solution of 19_moe_routing that takes f_i from the router probabilities instead of counting assignments.
# course-llm exercise: 19_moe_routing
# expect-fail: balance_loss_value
# expect-hint: counted from `experts`
import torch


def top_k_route(logits, k):
    probs = logits.softmax(dim=-1)
    gates, experts = probs.topk(k, dim=-1)
    if k > 1:
        gates = gates / gates.sum(dim=-1, keepdim=True)
    return gates, experts


def balance_loss(logits, experts):
    n_expert = logits.size(-1)
    f = logits.softmax(dim=-1).mean(dim=0).detach()                   # BUG: f is not a count
    return n_expert * (f * logits.softmax(dim=-1).mean(dim=0)).sum()


def keep_mask(experts, n_expert, capacity):
    keep = torch.zeros(experts.shape, dtype=torch.bool)
    used = [0] * n_expert
    for r in range(experts.size(1)):
        for t in range(experts.size(0)):
            i = int(experts[t, r])
            if used[i] < capacity:
                used[i] += 1
                keep[t, r] = True
    return keep

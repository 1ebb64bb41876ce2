# Planted bug: the reference solution of 19_moe_routing that renormalises the gate of top-1 routing too (every gate 1).
# course-llm exercise: 19_moe_routing
# expect-fail: top1_gate_is_the_probability
# expect-hint: do not renormalise
import torch


def top_k_route(logits, k):
    probs = logits.softmax(dim=-1)
    gates, experts = probs.topk(k, dim=-1)
    gates = gates / gates.sum(dim=-1, keepdim=True)                 # BUG: also for k = 1
    return gates, experts


def balance_loss(logits, experts):
    n_expert = logits.size(-1)
    f = torch.bincount(experts.flatten(), minlength=n_expert).float() / experts.numel()
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

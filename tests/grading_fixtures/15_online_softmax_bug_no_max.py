# Planted bug: the reference solution of 15_online_softmax without subtracting the running max.
# course-llm exercise: 15_online_softmax
# expect-fail: large_scores_do_not_overflow
# expect-hint: subtract the running max
import math

import torch


def online_attention(q, k, v, block_k):
    scale = 1.0 / math.sqrt(q.size(1))
    l = torch.zeros(q.size(0), 1, dtype=q.dtype)
    a = torch.zeros(q.size(0), v.size(1), dtype=q.dtype)
    for j in range(0, k.size(0), block_k):
        p = torch.exp(q @ k[j:j + block_k].T * scale)     # BUG: exp of raw scores overflows
        l = l + p.sum(-1, keepdim=True)
        a = a + p @ v[j:j + block_k]
    return a / l, torch.log(l).squeeze(-1)

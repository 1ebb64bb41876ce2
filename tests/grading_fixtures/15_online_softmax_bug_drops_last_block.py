# Planted bug: the reference solution of 15_online_softmax that skips a shorter last block.
# course-llm exercise: 15_online_softmax
# expect-fail: partial_last_block returns_logsumexp
# expect-hint: do not drop it
import math

import torch


def online_attention(q, k, v, block_k):
    scale = 1.0 / math.sqrt(q.size(1))
    m = torch.full((q.size(0), 1), float("-inf"), dtype=q.dtype)
    l = torch.zeros(q.size(0), 1, dtype=q.dtype)
    a = torch.zeros(q.size(0), v.size(1), dtype=q.dtype)
    for j in range(0, k.size(0) - block_k + 1, block_k):   # BUG: only full blocks
        s = q @ k[j:j + block_k].T * scale
        m_new = torch.maximum(m, s.amax(-1, keepdim=True))
        p = torch.exp(s - m_new)
        alpha = torch.exp(m - m_new)
        l = alpha * l + p.sum(-1, keepdim=True)
        a = alpha * a + p @ v[j:j + block_k]
        m = m_new
    return a / l, (m + torch.log(l)).squeeze(-1)

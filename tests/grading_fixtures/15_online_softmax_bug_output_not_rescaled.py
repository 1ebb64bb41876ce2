# Planted bug: the reference solution of 15_online_softmax that rescales the sum but not the output.
# course-llm exercise: 15_online_softmax
# expect-fail: rescales_when_the_max_grows
# expect-hint: rescale BOTH
import math

import torch


def online_attention(q, k, v, block_k):
    scale = 1.0 / math.sqrt(q.size(1))
    m = torch.full((q.size(0), 1), float("-inf"), dtype=q.dtype)
    l = torch.zeros(q.size(0), 1, dtype=q.dtype)
    a = torch.zeros(q.size(0), v.size(1), dtype=q.dtype)
    for j in range(0, k.size(0), block_k):
        s = q @ k[j:j + block_k].T * scale
        m_new = torch.maximum(m, s.amax(-1, keepdim=True))
        p = torch.exp(s - m_new)
        alpha = torch.exp(m - m_new)
        l = alpha * l + p.sum(-1, keepdim=True)
        a = a + p @ v[j:j + block_k]                          # BUG: a is not rescaled by alpha
        m = m_new
    return a / l, (m + torch.log(l)).squeeze(-1)

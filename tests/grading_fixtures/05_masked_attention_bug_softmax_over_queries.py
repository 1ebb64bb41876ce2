# Planted bug: the reference solution of 05_masked_attention that takes the softmax over the queries
# (dim=-2) instead of over the keys.
# course-llm exercise: 05_masked_attention
# expect-fail: unmasked scaled_by_sqrt_dk padding_mask causal_mask
# expect-hint: softmax over the queries
import math

import torch


def masked_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return scores.softmax(dim=-2) @ v  # BUG: softmax over the keys is dim=-1

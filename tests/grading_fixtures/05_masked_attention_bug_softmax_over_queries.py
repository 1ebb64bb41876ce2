# Planted bug: the reference solution of 05_masked_attention that takes the softmax over the queries
# (dim=-2) instead of over the keys.
# course-llm exercise: 05_masked_attention
# expect-fail: unmasked scaled_by_sqrt_dk additive_bias key_padding bias_and_padding
# expect-hint: over the queries
import math

import torch


def masked_attention(q, k, v, bias=None, key_padding_mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if bias is not None:
        scores = scores + bias
    if key_padding_mask is not None:
        B, S = key_padding_mask.shape
        padded = key_padding_mask.view(B, *[1] * (scores.dim() - 2), S)
        scores = scores.masked_fill(padded, float("-inf"))
    return scores.softmax(dim=-2) @ v  # BUG: over the keys, dim=-1

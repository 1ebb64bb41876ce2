# Planted bug: the reference solution of 05_masked_attention dividing the scores by d_K instead of sqrt(d_K).
# course-llm exercise: 05_masked_attention
# expect-fail: unmasked scaled_by_sqrt_dk additive_bias key_padding bias_and_padding
# expect-hint: you divided the scores by d_K
import math

import torch


def masked_attention(q, k, v, bias=None, key_padding_mask=None):
    scores = q @ k.transpose(-2, -1) / q.shape[-1]  # BUG: sqrt(d_K)
    if bias is not None:
        scores = scores + bias
    if key_padding_mask is not None:
        B, S = key_padding_mask.shape
        padded = key_padding_mask.view(B, *[1] * (scores.dim() - 2), S)
        scores = scores.masked_fill(padded, float("-inf"))
    return scores.softmax(dim=-1) @ v

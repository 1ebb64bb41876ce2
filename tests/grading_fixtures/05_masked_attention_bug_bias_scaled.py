# Planted bug: the reference solution of 05_masked_attention adding the bias before the scaling
# (the bias is then divided by sqrt(d_K) too).
# course-llm exercise: 05_masked_attention
# expect-fail: additive_bias bias_and_padding
# expect-hint: before dividing by sqrt(d_K)
import math

import torch


def masked_attention(q, k, v, bias=None, key_padding_mask=None):
    scores = q @ k.transpose(-2, -1)
    if bias is not None:
        scores = scores + bias
    scores = scores / math.sqrt(q.shape[-1])  # BUG: the bias is added to the scaled scores
    if key_padding_mask is not None:
        B, S = key_padding_mask.shape
        padded = key_padding_mask.view(B, *[1] * (scores.dim() - 2), S)
        scores = scores.masked_fill(padded, float("-inf"))
    return scores.softmax(dim=-1) @ v

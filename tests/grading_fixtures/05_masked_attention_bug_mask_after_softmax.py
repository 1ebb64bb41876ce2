# Planted bug: the reference solution of 05_masked_attention zeroing the padded keys' weights after
# the softmax (the rows then no longer sum to 1). It scored 5/7 or 3/7 depending on the seed while
# the padding check could draw no padding.
# course-llm exercise: 05_masked_attention
# expect-fail: key_padding bias_and_padding
# expect-hint: zeroed the weights after the softmax
import math

import torch


def masked_attention(q, k, v, bias=None, key_padding_mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if bias is not None:
        scores = scores + bias
    weights = scores.softmax(dim=-1)
    if key_padding_mask is not None:
        B, S = key_padding_mask.shape
        padded = key_padding_mask.view(B, *[1] * (scores.dim() - 2), S)
        weights = weights.masked_fill(padded, 0.0)  # BUG: after the softmax
    return weights @ v

# Planted bug: the reference solution of 05_masked_attention with the key-padding mask read the
# wrong way round (True taken as "may attend").
# course-llm exercise: 05_masked_attention
# expect-fail: key_padding bias_and_padding
# expect-hint: True at PADDED keys
import math

import torch


def masked_attention(q, k, v, bias=None, key_padding_mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if bias is not None:
        scores = scores + bias
    if key_padding_mask is not None:
        B, S = key_padding_mask.shape
        padded = key_padding_mask.view(B, *[1] * (scores.dim() - 2), S)
        scores = scores.masked_fill(~padded, float("-inf"))  # BUG: True means padded
    return scores.softmax(dim=-1) @ v

# Planted bug: the reference solution of 05_masked_attention that views the key-padding mask as
# (B, 1, 1, S) whatever the rank: right for (B, H, L, d) inputs, wrong for (B, L, d).
# course-llm exercise: 05_masked_attention
# expect-fail: bias_and_padding
# expect-hint: (B, 1, S)
import math

import torch


def masked_attention(q, k, v, bias=None, key_padding_mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if bias is not None:
        scores = scores + bias
    if key_padding_mask is not None:
        B, S = key_padding_mask.shape
        padded = key_padding_mask.view(B, *[1] * (scores.dim() - 2), S)
        scores = scores.masked_fill(key_padding_mask[:, None, None, :], float("-inf"))  # BUG
    return scores.softmax(dim=-1) @ v

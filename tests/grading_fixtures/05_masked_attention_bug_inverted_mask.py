# Planted bug: the reference solution of 05_masked_attention with the mask read the wrong way round
# (torch.nn.MultiheadAttention's convention, where True means "masked").
# course-llm exercise: 05_masked_attention
# expect-fail: padding_mask causal_mask
# expect-hint: True where a query MAY attend
import math

import torch


def masked_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        # BUG: hides the allowed keys (a fully hidden row would even give NaN)
        scores = scores.masked_fill(mask, float("-inf"))
    return scores.softmax(dim=-1) @ v

# Planted bug: the reference solution of 05_masked_attention dividing the scores by d_K instead of sqrt(d_K).
# course-llm exercise: 05_masked_attention
# expect-fail: unmasked scaled_by_sqrt_dk padding_mask causal_mask
# expect-hint: you divided the scores by d_K
import torch


def masked_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / q.shape[-1]  # BUG: d_K, not sqrt(d_K)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return scores.softmax(dim=-1) @ v

# Planted bug: the reference solution of 05_masked_attention zeroing the masked weights after the
# softmax (the rows then no longer sum to 1). It scored 5/7 or 3/7 depending on the seed while
# the padding check could draw no padding.
# course-llm exercise: 05_masked_attention
# expect-fail: padding_mask causal_mask
# expect-hint: before the softmax


def masked_attention(q, k, v, mask=None):
    weights = (q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5).softmax(dim=-1)
    if mask is not None:
        weights = weights * mask  # BUG: masked after the softmax
    return weights @ v

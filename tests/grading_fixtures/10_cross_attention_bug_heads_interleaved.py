# Planted bug: the reference solution of 10_cross_attention splitting the heads as (d_head, n_heads) instead of
# (n_heads, d_head), so each head gets every n_heads-th column instead of a block of d_head columns.
# course-llm exercise: 10_cross_attention
# expect-fail: multi_head
# expect-hint: head h uses columns
import torch


def cross_attention(x, z, w_q, w_k, w_v, w_o, n_heads, z_mask=None):
    B, T, _ = x.shape
    S = z.shape[1]
    d_head = w_q.shape[0] // n_heads

    def heads(t, n):
        return t.view(B, n, d_head, n_heads).permute(0, 3, 1, 2)      # BUG: interleaved columns

    q, k, v = heads(x @ w_q.T, T), heads(z @ w_k.T, S), heads(z @ w_v.T, S)
    scores = q @ k.transpose(-2, -1)
    if z_mask is not None:
        scores = scores.masked_fill(~z_mask.bool()[:, None, None, :], float("-inf"))
    y = torch.softmax(scores, dim=-1) @ v
    return y.permute(0, 2, 3, 1).reshape(B, T, n_heads * d_head) @ w_o.T

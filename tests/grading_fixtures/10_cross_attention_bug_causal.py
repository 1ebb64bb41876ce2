# Planted bug: the reference solution of 10_cross_attention with a causal mask, copied from self-attention:
# decoder position t then reads only encoder positions 0..t.
# course-llm exercise: 10_cross_attention
# expect-fail: single_head multi_head unscaled encoder_padding not_causal
# expect-hint: you applied a causal mask
import torch


def cross_attention(x, z, w_q, w_k, w_v, w_o, n_heads, z_mask=None):
    B, T, _ = x.shape
    S = z.shape[1]
    d_head = w_q.shape[0] // n_heads

    def heads(t, n):
        return t.view(B, n, n_heads, d_head).transpose(1, 2)

    q, k, v = heads(x @ w_q.T, T), heads(z @ w_k.T, S), heads(z @ w_v.T, S)
    scores = q @ k.transpose(-2, -1)
    scores = scores.masked_fill(~torch.ones(T, S, dtype=torch.bool).tril(), float("-inf"))  # BUG
    if z_mask is not None:
        scores = scores.masked_fill(~z_mask.bool()[:, None, None, :], float("-inf"))
    y = torch.softmax(scores, dim=-1) @ v
    return y.transpose(1, 2).reshape(B, T, n_heads * d_head) @ w_o.T

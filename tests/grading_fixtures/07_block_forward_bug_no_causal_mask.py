# Planted bug: the reference solution of 07_block_forward with attention without the causal mask (every position sees the future).
# course-llm exercise: 07_block_forward
# expect-fail: matches_the_block causal wide_heads gelu_tanh
# expect-hint: query t may only attend to keys 0..t
import math

import torch
import torch.nn.functional as F


def block_forward(x, weights, n_head, eps=1e-5):
    B, T, d = x.shape
    d_head = d // n_head

    def heads(t):                                                    # (B, T, d) -> (B, H, T, d_head)
        return t.view(B, T, n_head, d_head).transpose(1, 2)

    z = F.layer_norm(x, (d,), weights["ln1_weight"], weights["ln1_bias"], eps)
    q = heads(F.linear(z, weights["W_q"], weights["b_q"]))
    k = heads(F.linear(z, weights["W_k"], weights["b_k"]))
    v = heads(F.linear(z, weights["W_v"], weights["b_v"]))
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_head)              # (B, H, T, T)
    future = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
    attn = scores.softmax(dim=-1) @ v                                # BUG: no causal mask
    attn = attn.transpose(1, 2).reshape(B, T, d)                      # concatenate the heads
    h = x + F.linear(attn, weights["W_o"], weights["b_o"])
    z = F.layer_norm(h, (d,), weights["ln2_weight"], weights["ln2_bias"], eps)
    hidden = F.gelu(F.linear(z, weights["W_1"], weights["b_1"]), approximate="tanh")
    return h + F.linear(hidden, weights["W_2"], weights["b_2"])

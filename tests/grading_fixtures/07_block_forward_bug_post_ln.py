# Planted bug: the reference solution of 07_block_forward with post-LN (normalise after each residual addition) instead of pre-LN.
# course-llm exercise: 07_block_forward
# expect-fail: matches_the_block single_token wide_heads gelu_tanh
# expect-hint: post-LN
import math

import torch
import torch.nn.functional as F


def block_forward(x, weights, n_head, eps=1e-5):
    B, T, d = x.shape
    d_head = d // n_head

    def heads(t):                                                    # (B, T, d) -> (B, H, T, d_head)
        return t.view(B, T, n_head, d_head).transpose(1, 2)

    z = x                                                            # BUG: post-LN: attention reads x itself
    q = heads(F.linear(z, weights["W_q"], weights["b_q"]))
    k = heads(F.linear(z, weights["W_k"], weights["b_k"]))
    v = heads(F.linear(z, weights["W_v"], weights["b_v"]))
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_head)              # (B, H, T, T)
    future = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
    attn = scores.masked_fill(future, float("-inf")).softmax(dim=-1) @ v
    attn = attn.transpose(1, 2).reshape(B, T, d)                      # concatenate the heads
    h = F.layer_norm(x + F.linear(attn, weights["W_o"], weights["b_o"]), (d,), weights["ln1_weight"],
                     weights["ln1_bias"], eps)
    hidden = F.gelu(F.linear(h, weights["W_1"], weights["b_1"]), approximate="tanh")
    return F.layer_norm(h + F.linear(hidden, weights["W_2"], weights["b_2"]), (d,), weights["ln2_weight"],
                        weights["ln2_bias"], eps)

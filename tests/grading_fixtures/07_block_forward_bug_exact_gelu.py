# Planted bug: the reference solution of 07_block_forward with the exact (erf) GELU instead of GPT-2's tanh approximation.
# course-llm exercise: 07_block_forward
# expect-fail: gelu_tanh
# expect-hint: tanh approximation
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
    attn = scores.masked_fill(future, float("-inf")).softmax(dim=-1) @ v
    attn = attn.transpose(1, 2).reshape(B, T, d)                      # concatenate the heads
    h = x + F.linear(attn, weights["W_o"], weights["b_o"])
    z = F.layer_norm(h, (d,), weights["ln2_weight"], weights["ln2_bias"], eps)
    hidden = F.gelu(F.linear(z, weights["W_1"], weights["b_1"]))     # BUG: exact GELU, not tanh
    return h + F.linear(hidden, weights["W_2"], weights["b_2"])

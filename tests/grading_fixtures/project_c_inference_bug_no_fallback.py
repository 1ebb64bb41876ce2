# Planted bug: the reference solution of project_c_inference looking up only the longest n-gram (no fallback to shorter ones).
# course-llm exercise: project_c_inference
# expect-fail: lookup_draft
# expect-hint: down to 1
import math

import torch
import torch.nn.functional as F


def kv_forward(state, config, tokens, cache=None):
    B, T = tokens.shape
    d, H, eps = config["d_model"], config["n_head"], config["norm_eps"]
    dh = d // H
    t0 = 0 if not cache else cache[0][0].shape[2]  # positions already cached
    x = state["tok_emb.weight"][tokens] + state["pos_emb.weight"][t0 : t0 + T]
    allowed = torch.ones(T, t0 + T, dtype=torch.bool).tril(t0)  # query i sees keys <= t0+i
    new_cache = []
    for i in range(config["n_layer"]):
        p = f"blocks.{i}."

        def lin(h, name):
            return F.linear(h, state[p + name + ".weight"], state[p + name + ".bias"])

        h = F.layer_norm(x, (d,), state[p + "norm1.weight"], state[p + "norm1.bias"], eps)
        q, k, v = (lin(h, f"attn.{n}_proj").view(B, T, H, dh).transpose(1, 2) for n in "qkv")
        if cache:
            k = torch.cat([cache[i][0], k], dim=2)  # (B, H, t0 + T, dh)
            v = torch.cat([cache[i][1], v], dim=2)
        new_cache.append([k, v])
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(dh)  # (B, H, T, t0 + T)
        att = scores.masked_fill(~allowed, float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, d)
        x = x + lin(y, "attn.out_proj")
        h = F.layer_norm(x, (d,), state[p + "norm2.weight"], state[p + "norm2.bias"], eps)
        x = x + lin(F.gelu(lin(h, "ffn.w1"), approximate="tanh"), "ffn.w2")
    x = F.layer_norm(x, (d,), state["norm.weight"], state["norm.bias"], eps)
    return F.linear(x, state["lm_head.weight"]), new_cache


def quantize_int8_rows(w):
    scale = w.abs().amax(dim=1) / 127  # (out,)
    safe = torch.where(scale > 0, scale, torch.ones_like(scale))
    codes = torch.round(w / safe[:, None]).clamp(-127, 127).to(torch.int8)
    return codes, scale


def quantize_int4_groups(w, group_size):
    out_f, in_f = w.shape
    g = w.reshape(out_f, in_f // group_size, group_size)
    scale = (g.abs().amax(-1) / 7).to(torch.float16)  # (out, n_groups), stored in fp16
    safe = torch.where(scale > 0, scale, torch.ones_like(scale)).float()
    codes = torch.round(g / safe[..., None]).clamp(-7, 7).reshape(out_f, in_f)
    u = (codes + 8).to(torch.uint8)  # [1, 15]
    return u[:, 0::2] | (u[:, 1::2] << 4), scale


def dequantize_int4_groups(packed, scale, group_size):
    lo, hi = packed & 15, packed >> 4
    codes = torch.stack([lo, hi], dim=-1).flatten(1).float() - 8  # (out, in)
    out_f, in_f = codes.shape
    g = codes.reshape(out_f, in_f // group_size, group_size) * scale.float()[..., None]
    return g.reshape(out_f, in_f)


def lookup_draft(tokens, k, max_ngram=3):
    L = len(tokens)
    for n in [max_ngram] if max_ngram < L else []:  # BUG: no shorter n-grams
        suffix = tokens[L - n :]
        for i in range(L - n):  # the earliest occurrence: the longest continuation
            if tokens[i : i + n] == suffix:
                return list(tokens[i + n : i + n + k])
    return []


def greedy_accept(draft, logits):
    best = logits.argmax(-1).tolist()  # the target's choice after each prefix
    out = []
    for d, b in zip(draft, best):
        if d != b:
            break
        out.append(d)
    out.append(best[len(out)])
    return out

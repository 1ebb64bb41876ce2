"""Forward + backward of one transformer block: course_llm.layers.TransformerBlock vs
torch.nn.TransformerEncoderLayer with the same configuration (and the same weights).

Setting from the chapter 05-06 spec: d_model=256, 8 heads, FFN 4d, sequence length 256,
batch 16, CPU, float32, dropout 0, LayerNorm; post-LN (PyTorch's default) and pre-LN.

Reports the median time of a forward+backward pass and the memory the pass keeps for the
backward (bytes of the distinct tensors autograd saves, measured with saved_tensors_hooks),
plus the ratio ours / torch (target: time within 10%).

    .venv/bin/python benchmarks/bench_block.py [--threads N] [--repeats R]
"""

import argparse
import statistics
import time

import torch
import torch.nn as nn

from course_llm.layers import TransformerBlock, TransformerConfig

D, H, T, B = 256, 8, 256, 16


def make_pair(pre_norm, causal):
    torch.manual_seed(0)
    theirs = nn.TransformerEncoderLayer(D, H, dim_feedforward=4 * D, dropout=0.0, activation="gelu",
                                        batch_first=True, norm_first=pre_norm)
    ours = TransformerBlock(TransformerConfig(d_model=D, n_head=H, d_ff=4 * D, activation="gelu",
                                              pre_norm=pre_norm, causal=causal))
    with torch.no_grad():                                       # same weights: same function
        for lin, w, b in zip((ours.attn.q_proj, ours.attn.k_proj, ours.attn.v_proj),
                             theirs.self_attn.in_proj_weight.chunk(3), theirs.self_attn.in_proj_bias.chunk(3)):
            lin.weight.copy_(w)
            lin.bias.copy_(b)
    ours.attn.out_proj.load_state_dict(theirs.self_attn.out_proj.state_dict())
    ours.ffn.w1.load_state_dict(theirs.linear1.state_dict())
    ours.ffn.w2.load_state_dict(theirs.linear2.state_dict())
    ours.norm1.load_state_dict(theirs.norm1.state_dict())
    ours.norm2.load_state_dict(theirs.norm2.state_dict())
    if causal:
        mask = nn.Transformer.generate_square_subsequent_mask(T)
        return ours, lambda x: theirs(x, src_mask=mask, is_causal=True)
    return ours, theirs


def step(module, x):
    out = module(x)
    out.square().mean().backward()
    return out


def saved_bytes(module, x):
    """Bytes of distinct tensors autograd keeps for the backward of one forward pass."""
    seen = {}

    def pack(t):
        seen[(t.untyped_storage().data_ptr(), t.dtype)] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = module(x)
    del out
    return sum(seen.values()) - x.numel() * x.element_size()    # the input itself is not extra


def time_pair(a, b, x, repeats):
    """Median seconds per forward+backward of `a` and of `b`, interleaved so that both see the
    same machine load (the course machines are shared)."""
    for _ in range(3):                                          # warm-up
        step(a, x)
        step(b, x)
    times = {0: [], 1: []}
    for r in range(repeats):
        order = (0, 1) if r % 2 == 0 else (1, 0)
        for i in order:
            t0 = time.perf_counter()
            step((a, b)[i], x)
            times[i].append(time.perf_counter() - t0)
    return statistics.median(times[0]), statistics.median(times[1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    x = torch.randn(B, T, D, generator=torch.Generator().manual_seed(0), requires_grad=True)
    print(f"one block, d={D}, {H} heads, FFN {4 * D}, T={T}, batch {B}, float32, CPU, "
          f"{args.threads} thread(s), median of {args.repeats}")
    print(f"{'variant':<22}{'ours ms':>9}{'torch ms':>10}{'ratio':>8}{'ours MiB':>10}{'torch MiB':>11}{'max |diff|':>12}")
    for pre_norm in (False, True):
        for causal in (False, True):
            ours, theirs = make_pair(pre_norm, causal)
            with torch.no_grad():
                diff = (ours(x) - theirs(x)).abs().max().item()
            t_ours, t_theirs = time_pair(ours, theirs, x, args.repeats)
            m_ours, m_theirs = saved_bytes(ours, x) / 2**20, saved_bytes(theirs, x) / 2**20
            name = f"{'pre' if pre_norm else 'post'}-LN, {'causal' if causal else 'bidirectional'}"
            print(f"{name:<22}{t_ours * 1e3:>9.1f}{t_theirs * 1e3:>10.1f}{t_ours / t_theirs:>8.2f}"
                  f"{m_ours:>10.1f}{m_theirs:>11.1f}{diff:>12.1e}")


if __name__ == "__main__":
    main()

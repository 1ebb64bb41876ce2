"""Forward + backward of course_llm.gpt.GPT against nanoGPT's model.py, one thread (issue #32 item 7).

Two sizes, gpt2-style with exact GELU (nanoGPT's `nn.GELU()`), tied output, no dropout:

* tiny: the zoo's Shakespeare character model (vocabulary 65, 4 layers, width 128, 4 heads,
  context 128), batch 8 x 128;
* small: vocabulary 2048, 4 layers, width 256, 8 heads, context 128, batch 8 x 128.

The reference is `benchmarks/nanogpt_model.py`, a faithful copy of nanoGPT's model (attribution
in that file), loaded with our weights; the script checks that the losses agree before timing.
What is timed is the model alone: zero_grad, forward with targets, backward, in thread CPU
time (`time.thread_time`: on a shared machine the wall clock of one thread measures the
scheduler). Both models then step with the same optimizer, `torch.optim.AdamW` with its
default kernel, outside the timer. Runs are interleaved (ours, nanoGPT, ours, ...) and the
medians compared; "paired" is the median of nanoGPT/ours over the runs made back to back.
A ratio nanoGPT/ours >= 1.0 means ours is at least as fast.

    .venv/bin/python benchmarks/bench_gpt.py [--threads 1] [--repeats 15] [--steps 2]

"ours (fused_qkv)" is `GPTConfig(fused_qkv=True)`: one matrix product for q, k, v, as
nanoGPT's `c_attn` (opt-in, chapter 06).

Measured 2026-11-27, 1 thread, 2 cores shared with 8 agents (load 9-10), torch 2.13, 15 runs of
2 steps, nanogpt/ours (paired median):
- before the GPT of chapter 07 validated once at its entry: tiny 1.004x (1.014), small
  0.985x (0.982); fused_qkv 1.000x and 0.997x;
- after: tiny 1.002x (0.988), small 0.989x (0.990); fused_qkv 0.994x and 0.995x.
The GPT's own per-call work was already entry-only, so the split changes nothing measurable.
What is left at the small size is attention's three q/k/v products against nanoGPT's one
(a profile counts 153 `mm` + 72 `addmm` calls per 3 steps against 105 + 48):
`fused_qkv=True` gets within 0.5%.
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import nanogpt_model as nano

from course_llm.gpt import GPT
from course_llm.gpt_config import GPTConfig

SIZES = {  # name: (vocab_size, n_layer, d_model, n_head, context, batch)
    "tiny": (65, 4, 128, 4, 128, 8),
    "small": (2048, 4, 256, 8, 128, 8),
}


@torch.no_grad()
def load_nanogpt(ref, ours):
    """Copy `ours`' weights into nanoGPT's layout (q, k, v stacked into c_attn)."""
    t = ref.transformer
    t.wte.weight.copy_(ours.tok_emb.weight)  # tied: lm_head too
    t.wpe.weight.copy_(ours.pos_emb.weight)
    t.ln_f.weight.copy_(ours.norm.weight)
    t.ln_f.bias.copy_(ours.norm.bias)
    for rb, ob in zip(t.h, ours.blocks):
        a = ob.attn
        for name in ("weight", "bias"):
            qkv = [getattr(p, name) for p in (a.q_proj, a.k_proj, a.v_proj)]
            getattr(rb.attn.c_attn, name).copy_(torch.cat(qkv))
            for mine, theirs in ((a.out_proj, rb.attn.c_proj), (ob.ffn.w1, rb.mlp.c_fc),
                                 (ob.ffn.w2, rb.mlp.c_proj), (ob.norm1, rb.ln_1),
                                 (ob.norm2, rb.ln_2)):
                getattr(theirs, name).copy_(getattr(mine, name))


def build(size):
    V, L, D, H, T, B = SIZES[size]
    kw = {"vocab_size": V, "max_len": T, "n_layer": L, "d_model": D, "n_head": H,
          "d_ff": 4 * D, "activation": "gelu"}
    torch.manual_seed(0)
    ours = GPT(GPTConfig.gpt2_style(**kw))
    fused = GPT(GPTConfig.gpt2_style(**kw, fused_qkv=True))
    fused.load_state_dict(ours.state_dict())
    ref = nano.GPT(nano.GPTConfig(max_len=T, vocab_size=V, n_layer=L, n_head=H, n_embd=D))
    load_nanogpt(ref, ours)
    models = {"ours": ours, "ours (fused_qkv)": fused, "nanogpt": ref}
    counts = {k: sum(p.numel() for p in m.parameters()) for k, m in models.items()}
    assert len(set(counts.values())) == 1, counts
    g = torch.Generator().manual_seed(1)
    x, y = (torch.randint(0, V, (B, T), generator=g) for _ in range(2))
    losses = [m(x, y)[1].item() for m in models.values()]
    assert max(losses) - min(losses) < 1e-4, losses
    return models, x, y, counts["ours"]


def bench(size, repeats, steps):
    models, x, y, n = build(size)
    opts = {k: torch.optim.AdamW(m.parameters(), lr=1e-4) for k, m in models.items()}
    times = {k: [] for k in models}

    def run(k):
        m, opt, spent = models[k], opts[k], 0.0
        for _ in range(steps):
            c0 = time.thread_time()
            opt.zero_grad(set_to_none=True)
            _, loss = m(x, y)
            loss.backward()
            spent += time.thread_time() - c0
            opt.step()  # the same optimizer on both sides, not timed
        return spent / steps

    for k in models:
        run(k)  # warm-up
    for _ in range(repeats):
        for k in models:
            times[k].append(run(k))
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"\n{size}: {n:,} parameters, batch {tuple(x.shape)}; forward + backward, "
          f"thread CPU ms per step, median of {repeats} interleaved runs of {steps} steps")
    print("| model | ms | nanogpt/model | paired median [min, max] |")
    print("|---|---|---|---|")
    for k in models:
        r = sorted(a / b for a, b in zip(times["nanogpt"], times[k]))
        print(f"| {k} | {1e3 * med[k]:.2f} | {med['nanogpt'] / med[k]:.3f}x "
              f"| {statistics.median(r):.3f} [{r[0]:.3f}, {r[-1]:.3f}] |")
    return med["nanogpt"] / med["ours"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--steps", type=int, default=2, help="steps per timed run")
    ap.add_argument("--sizes", default="tiny,small")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    print(f"threads={a.threads}, load average {os.getloadavg()[0]:.1f} (machine shared), "
          f"torch {torch.__version__}")
    ratios = {s: bench(s, a.repeats, a.steps) for s in a.sizes.split(",")}
    print("\ntarget nanogpt/ours >= 1.00: " + ", ".join(
        f"{s} {r:.3f}x ({'met' if r >= 1.0 else 'NOT met'})" for s, r in ratios.items()))


if __name__ == "__main__":
    main()

"""Greedy generation speed: course_llm.generate with and without the KV cache, and against
transformers' generate() on the same weights (GPT.to_hf).

Setting from the chapter 08 spec: llama-style (8 heads, 4 key/value heads) and gpt2-style
models with 4 layers, d_model=256, vocab 2048, random weights; a 32-token prompt, 256 new
tokens, greedy, CPU, float32. Targets: cached >= 8x uncached (batch 1); ours >= 1.2x the
tokens/s of transformers at batch 1 and >= 1.0x at batch 8. Runs are interleaved and the
median of `--repeats` is reported; the script also checks that all paths emit the same tokens.

    .venv/bin/python benchmarks/bench_generate.py [--threads N] [--repeats R]

Measured 2026-11-23, 1 thread, 2 shared cores (ratios of medians of 3; absolute tok/s swing
with the load). Before the enable_gqa / RoPE-table change (main), load 3.1: llama cached/uncached
7.4x, ours/HF 1.11x (batch 1) 1.10x (batch 8); gpt2 10.1x, 1.35x, 1.23x. After, load 6.4:
llama 9.0x, 1.41x, 1.09x; gpt2 12.0x, 1.24x, 1.31x; load 5.3: llama 9.5x, 1.44x, 1.08x;
gpt2 11.4x, 1.29x, 1.25x. A run at load 7.9-10 gave llama 5.1x, 0.99x, 1.25x; gpt2 6.0x,
0.77x, 1.19x: under heavy contention the batch-1 ratios are not reliable.
"""

import argparse
import os
import statistics
import time

import torch

from course_llm.generate import generate
from course_llm.gpt import GPT
from course_llm.gpt_config import GPTConfig

PROMPT, NEW, V = 32, 256, 2048


def model(style):
    torch.manual_seed(0)
    kw = dict(vocab_size=V, max_len=PROMPT + NEW, n_layer=4, d_model=256, n_head=8)
    cfg = GPTConfig.llama_style(n_kv_head=4, **kw) if style == "llama" else GPTConfig.gpt2_style(**kw)
    return GPT(cfg).eval()


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    print(f"threads={a.threads}, load average {os.getloadavg()[0]:.1f} (machine shared)")
    print("| style | batch | ours cached tok/s | ours uncached tok/s | HF generate tok/s | cached/uncached | ours/HF |")
    print("|---|---|---|---|---|---|---|")
    for style in ("llama", "gpt2"):
        m = model(style)
        hf = m.to_hf().eval()
        for B in (1, 8):
            idx = torch.randint(0, V, (B, PROMPT), generator=torch.Generator().manual_seed(1))
            mask = torch.ones_like(idx)
            runs = {"cached": lambda: generate(m, idx, NEW, temperature=0),
                    "uncached": lambda: generate(m, idx, NEW, temperature=0, use_cache=False),
                    "hf": lambda: hf.generate(idx, attention_mask=mask, max_new_tokens=NEW, min_new_tokens=NEW,
                                              do_sample=False, num_beams=1)}
            if B == 8:
                runs.pop("uncached")
            times = {k: [] for k in runs}
            outs = {}
            with torch.inference_mode():
                for k, f in runs.items():
                    f()                                            # warm-up
                for _ in range(a.repeats):
                    for k, f in runs.items():
                        t, outs[k] = timed(f)
                        times[k].append(t)
            for k in outs:
                assert torch.equal(outs[k], outs["cached"]), f"{k} tokens differ"
            tps = {k: B * NEW / statistics.median(v) for k, v in times.items()}
            unc = tps.get("uncached")
            unc_s = f"{unc:.0f}" if unc else "-"
            speedup = f"{tps['cached'] / unc:.1f}x" if unc else "-"
            print(f"| {style} | {B} | {tps['cached']:.0f} | {unc_s} | {tps['hf']:.0f} | {speedup} | "
                  f"{tps['cached'] / tps['hf']:.2f}x |")


if __name__ == "__main__":
    main()

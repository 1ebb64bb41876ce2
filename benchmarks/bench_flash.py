"""Training step (forward + backward) of one attention layer on a CPU: naive attention,
autograd through the tiled forward loop, course_llm.flash.flash_attention (recomputing
backward) and PyTorch's fused SDPA.

Reports, per sequence length, the median wall time of a training step (calls interleaved
across methods, so that a load change on a shared machine hits all of them) and the peak bytes
the step allocates (course_llm.flash.peak_tensor_bytes: forward, backward and gradients).
On a GPU (``--device cuda``) it restricts SDPA to its flash backend and reports
``torch.cuda.max_memory_allocated`` instead. On a CPU, SDPA's peak misses the buffers its
fused kernel allocates internally (the dispatch mode sees only operator outputs).

    .venv/bin/python benchmarks/bench_flash.py [--threads N] [--repeats R] [--lengths 512 1024]
        [--heads H] [--device cpu|cuda]
"""

import argparse
import contextlib
import math
import statistics
import time

import torch
import torch.nn.functional as F

from course_llm.flash import _flash_forward, flash_attention, peak_tensor_bytes


def naive(q, k, v):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    return torch.softmax(s, -1) @ v


def tiled_loop(q, k, v):
    return _flash_forward(q, k, v, False, 64, 64, 1 / math.sqrt(q.size(-1)), None)[0]


def sdpa(q, k, v):
    ctx = contextlib.nullcontext()
    if q.is_cuda:
        from torch.nn.attention import SDPBackend, sdpa_kernel

        ctx = sdpa_kernel(SDPBackend.FLASH_ATTENTION)
    with ctx:
        return F.scaled_dot_product_attention(q, k, v)


METHODS = {"naive": naive, "tiled loop": tiled_loop, "flash_attention": flash_attention,
           "SDPA": sdpa}


def step(attn, q, k, v, dO):
    with torch.enable_grad():
        q, k, v = (t.detach().requires_grad_() for t in (q, k, v))
        attn(q, k, v).backward(dO)
    return q.grad


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--lengths", type=int, nargs="+", default=[256, 512, 1024, 2048])
    ap.add_argument("--heads", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    dtype = torch.float16 if device.type == "cuda" else torch.float32
    print(f"device {device}, {args.threads} thread(s), {args.heads} head(s) of width 64, {dtype}")
    print(f"{'T':>6} {'method':>16} {'median ms':>10} {'peak MB':>9}")
    for T in args.lengths:
        g = torch.Generator(device=device).manual_seed(T)
        q, k, v, dO = torch.randn(4, 1, args.heads, T, 64, generator=g, device=device,
                                  dtype=dtype)
        peaks, times = {}, {name: [] for name in METHODS}
        for name, attn in METHODS.items():
            if device.type == "cuda":
                torch.cuda.reset_peak_memory_stats()
                base = torch.cuda.memory_allocated()
                step(attn, q, k, v, dO)
                peaks[name] = torch.cuda.max_memory_allocated() - base
            else:
                peaks[name] = peak_tensor_bytes(step, attn, q, k, v, dO)[1]
        for _ in range(args.repeats):  # interleaved
            for name, attn in METHODS.items():
                sync(device)
                t0 = time.perf_counter()
                step(attn, q, k, v, dO)
                sync(device)
                times[name].append(time.perf_counter() - t0)
        for name in METHODS:
            ms = statistics.median(times[name]) * 1e3
            print(f"{T:6d} {name:>16} {ms:10.1f} {peaks[name] / 2**20:9.2f}")


if __name__ == "__main__":
    main()

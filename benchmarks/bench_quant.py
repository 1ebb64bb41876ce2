"""Weight-only quantization on a CPU: nn.Linear against course_llm.quantize.QuantLinear.

Chapter 16 says that weight-only quantization does not speed up a CPU matmul by itself: our
QuantLinear dequantizes its codes on every call, then runs the same float matmul. This measures
the forward time of one SmolLM2-sized MLP projection (1536 -> 576) at a few batch sizes, for
float32 and for int8 / int4 groups of 32 (symmetric, zero-point and float minimum), interleaved,
and reports medians and the ratio quantized / float32 (expect >= 1: slower, never faster).

    .venv/bin/python benchmarks/bench_quant.py [--threads N] [--repeats R]
"""

import argparse
import statistics
import time

import torch
import torch.nn as nn

from course_llm.quantize import QuantLinear

FORMS = {
    "int8 symmetric": {"bits": 8, "group_size": 32},
    "int4 symmetric": {"bits": 4, "group_size": 32},
    "int4 zero-point": {"bits": 4, "group_size": 32, "symmetric": False, "zero_point": True},
    "int4 float minimum": {"bits": 4, "group_size": 32, "symmetric": False},
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=21)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    lin = nn.Linear(1536, 576)
    layers = {"float32": lin} | {k: QuantLinear.from_linear(lin, **kw) for k, kw in FORMS.items()}
    print(f"threads={args.threads}, median of {args.repeats} interleaved runs, ms per forward")
    print(f"{'tokens':>7s} " + " ".join(f"{k:>19s}" for k in layers))
    for n_tok in (1, 16, 256):
        x = torch.randn(n_tok, 1536)
        times = {k: [] for k in layers}
        with torch.inference_mode():
            for _ in range(args.repeats):
                for k, layer in layers.items():                 # interleaved
                    t0 = time.perf_counter()
                    layer(x)
                    times[k].append(time.perf_counter() - t0)
        med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
        row = " ".join(f"{med[k]:8.3f} ({med[k] / med['float32']:5.1f}x)" for k in layers)
        print(f"{n_tok:7d} {row}")


if __name__ == "__main__":
    main()

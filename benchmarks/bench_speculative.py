"""Prompt lookup decoding on SmolLM2-135M-Instruct (CPU, float32): tokens/s against plain cached
greedy decoding, on tasks that copy their input and on one that does not.

Chapter 17 asserts > 1.3x for one edit task at n=3, k=8; this script sweeps the n-gram length n
and the draft length k over four prompts (a short edit, a long edit, a verbatim repeat, and an
open question, where little is copied and the lookup should not pay), checks that every output
equals plain greedy decoding token for token, and with `--hf` also that transformers' own
`generate(..., prompt_lookup_num_tokens=8)` on the same weights emits the same tokens. Runs are
interleaved (each repeat times every method once) and the median of `--repeats` is reported, so
that a slow spell of the shared machine hits all methods alike.

    .venv/bin/python benchmarks/bench_speculative.py [--threads N] [--repeats R] [--hf]

Measured 2026-11-27, 1 thread, 2 shared cores, load average 9 (speed-ups are ratios of medians
of 3; absolute tok/s swing with the load). Every output equalled plain greedy decoding and
transformers' prompt lookup (--hf):

| task | new tokens | plain tok/s | n=2 k=8 | n=3 k=4 | n=3 k=8 |
|---|---|---|---|---|---|
| edit (chapter 17) | 46 | 9.6 | 2.11x | 1.72x | 2.04x |
| edit, long | 60 | 7.1 | 3.66x | 3.69x | 4.06x |
| repeat | 59 | 7.0 | 2.82x | 2.31x | 2.75x |
| open question | 85 | 4.6 | 1.15x | 1.22x | 1.12x |
"""

import argparse
import os
import statistics
import time
from functools import partial

import torch

from course_llm.chat import render_chat
from course_llm.generate import generate
from course_llm.pretrained import load_gguf, smollm2_path
from course_llm.speculative import prompt_lookup_generate

MINUTES = (
    "The committee met on Tuesday to discuss the budget for next year. After a long "
    "debate, the members agreed to increase funding for the public library and to "
    "reduce spending on road repairs. The chair thanked everyone for their work."
)
LONG = MINUTES[: -len("The chair thanked everyone for their work.")] + (
    "The treasurer will present a revised plan at the next meeting, and the chair asked "
    "every member to send comments by email before then. The meeting closed at nine "
    "o'clock, and the chair thanked everyone for their work."
)
TASKS = {
    "edit (chapter 17)": "Rewrite the following text, replacing 'Tuesday' with 'Friday':\n\n" + MINUTES,
    "edit, long": "Rewrite the following text, replacing 'Tuesday' with 'Friday':\n\n" + LONG,
    "repeat": "Repeat the following text exactly:\n\n" + LONG,
    "open question": "Why do leaves change colour in autumn? Answer in a short paragraph.",
}
SETTINGS = [(2, 8), (3, 4), (3, 8)]  # (n, k)
NEW = 96


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--hf", action="store_true", help="also check transformers' prompt lookup")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    model, tok = load_gguf(smollm2_path())
    hf = model.to_hf().eval() if a.hf else None
    print(f"threads={a.threads}, load average {os.getloadavg()[0]:.1f} (machine shared)")
    print("| task | new tokens | plain tok/s | " + " | ".join(f"n={n} k={k}" for n, k in SETTINGS) + " |")
    print("|---|---|---|" + "---|" * len(SETTINGS))
    for task, request in TASKS.items():
        text = render_chat([{"role": "user", "content": request}], add_generation_prompt=True,
                           default_system=tok.default_system)
        ids = torch.tensor([tok.encode(text, allowed_special="all")])
        runs = {"plain": partial(generate, model, ids, NEW, temperature=0, eos_id=tok.eos_id)}
        for n, k in SETTINGS:
            runs[(n, k)] = partial(prompt_lookup_generate, model, ids, NEW, n=n, k=k, temperature=0,
                                   eos_id=tok.eos_id)
        times, outs = {name: [] for name in runs}, {}
        for _ in range(a.repeats):
            for name, run in runs.items():
                t0 = time.perf_counter()
                outs[name] = run()
                times[name].append(time.perf_counter() - t0)
        ref = outs["plain"]
        for name, out in outs.items():
            assert torch.equal(out, ref), f"{task} {name}: not the plain greedy output"
        if hf is not None:
            with torch.no_grad():
                got = hf.generate(ids, max_new_tokens=NEW, do_sample=False, prompt_lookup_num_tokens=8,
                                  eos_token_id=tok.eos_id, pad_token_id=tok.eos_id)
            assert torch.equal(got[0, : ref.size(1)], ref[0]), f"{task}: transformers differs"
        med = {name: statistics.median(t) for name, t in times.items()}
        new = ref.size(1) - ids.size(1)
        cells = " | ".join(f"{med['plain'] / med[s]:.2f}x" for s in SETTINGS)
        print(f"| {task} | {new} | {new / med['plain']:.1f} | {cells} |", flush=True)


if __name__ == "__main__":
    main()

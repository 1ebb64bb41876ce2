"""Train the zoo's "gpt-shakespeare-char": a character-level GPT on Shakespeare.

    python train/gpt_shakespeare_char.py [--steps 5000] [--out course_llm/zoo_weights]

Trains with the course's own `Trainer` on the training split of
`course_llm.data.corpus_splits("shakespeare")`, then writes
`gpt-shakespeare-char.safetensors`: the weights plus, in the file's metadata, the model config,
the tokenizer's characters, the training config, the seed, the step count, the wall time and the
validation loss in nats per character on the whole validation split. `course_llm.zoo.load`
reads it back. One CPU thread by default (the course machines have 2 cores).
"""
from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict
from pathlib import Path

import torch
from safetensors.torch import save

from course_llm.core import set_seed, write_atomic
from course_llm.data import corpus_splits, load_corpus
from course_llm.gpt import GPT
from course_llm.gpt_config import GPTConfig
from course_llm.tokenizers import CharTokenizer
from course_llm.train_config import TrainConfig
from course_llm.trainer import Trainer
from course_llm.checkpoints import latest_checkpoint
from course_llm.zoo import stream_loss

NAME = "gpt-shakespeare-char"


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=5000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--run-dir", default=None,
                   help="keep resumable checkpoints here (and resume from the latest one)")
    p.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "course_llm" / "zoo_weights"))
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    set_seed(args.seed)
    train, val, _ = corpus_splits("shakespeare")
    tok = CharTokenizer(load_corpus("shakespeare"))
    train_ids = torch.tensor(tok.encode(train))
    val_ids = torch.tensor(tok.encode(val))
    model_cfg = GPTConfig.gpt2_style(vocab_size=tok.vocab_size, max_len=128, n_layer=4,
                                     d_model=128, n_head=4)
    model = GPT(model_cfg)
    cfg = TrainConfig(max_steps=args.steps, batch_size=32, seq_len=128, max_lr=3e-3,
                      min_lr=3e-4, warmup_steps=100, weight_decay=0.1, max_grad_norm=1.0,
                      eval_interval=250, eval_tokens=32768, seed=args.seed, progress=False,
                      out_dir=args.run_dir, keep_checkpoints=2)
    trainer = Trainer(model, train_ids, val_ids, cfg)
    clock = Path(args.run_dir) / "wall_time.json" if args.run_dir else None
    wall = 0.0
    if args.run_dir and latest_checkpoint(args.run_dir) is not None:
        trainer.load_checkpoint(args.run_dir)
        wall = json.loads(clock.read_text())["seconds"] if clock.exists() else 0.0
        print(f"resumed at step {trainer.step}", flush=True)
    while trainer.step < args.steps:
        t0 = time.time()
        trainer.fit(steps=min(250, args.steps - trainer.step))
        wall += time.time() - t0
        if clock:                                     # the wall time survives a resume
            write_atomic(clock, json.dumps({"seconds": wall, "step": trainer.step}))
        print(f"step {trainer.step}: val {trainer.history['val_loss'][-1]:.4f} nats/char "
              f"({wall:.0f} s)", flush=True)
    nats = stream_loss(model, val_ids, context=128)
    meta = {
        "name": NAME,
        "model_config": json.dumps(asdict(model_cfg)),
        "tokenizer_chars": json.dumps(tok.itos),
        # out_dir is where this run kept its checkpoints, a folder of the training machine
        # and no part of the recipe: the shipped file records no machine path.
        "train_config": json.dumps({k: v for k, v in asdict(cfg).items() if k != "out_dir"}),
        "seed": str(args.seed),
        "steps": str(trainer.step),
        "wall_time_s": f"{wall:.0f}",
        "threads": str(args.threads),
        "val_nats_per_char": f"{nats:.4f}",
        "command": "python train/gpt_shakespeare_char.py --steps " + str(args.steps),
    }
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    if model_cfg.tie_weights:                         # tied weights are stored once
        state.pop("lm_head.weight", None)
    path = write_atomic(Path(args.out) / f"{NAME}.safetensors", save(state, metadata=meta))
    print(f"wrote {path}: {nats:.4f} nats/char on the validation split, {wall:.0f} s")
    return meta


if __name__ == "__main__":
    main()

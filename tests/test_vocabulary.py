"""One vocabulary (issue #32): the retired config names appear nowhere in the project.

A model's context capacity is `max_len`; the length of a training or evaluation window is
`seq_len`; AdamW's epsilon in `TrainConfig` is `adam_eps` and gradient clipping is
`max_grad_norm` everywhere. The names below were aliases of those and are gone. The retired
names are spelled in two pieces here, so that a grep for them finds only real uses.
"""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("course_llm", "nbs", "tests", "train", "benchmarks", "exercises")
RETIRED = [a + b for a, b in [("block", "_size"), ("max", "_positions"), ("Config", "Alias"),
                              ("init", "_config"), ("grad", "_clip"), ("d", "_kv")]]
# Hugging Face's T5Config names the head width `d_kv`: it may appear where the course talks to
# transformers (the name map of `course_llm.t5_hf`, and the tests and check cells that build a
# Hugging Face T5 to compare against), never in the course's own API.
HF_FIELD = {"d" + "_kv": {"nbs/10c_t5_hf.ipynb", "course_llm/t5_hf.py", "nbs/10_t5.ipynb",
                          "tests/test_t5.py", "tests/test_t5_hf.py",
                          "tests/test_t5_relative_bias.py"}}


def _files():
    for folder in FOLDERS:
        for p in sorted((ROOT / folder).rglob("*")):
            if p.suffix in {".py", ".ipynb", ".md", ".json", ".toml"} and p.is_file():
                yield p


@pytest.mark.parametrize("name", RETIRED)
def test_retired_name_is_gone(name):
    pattern = re.compile(rf"\b{name}\b")
    hits = []
    for p in _files():
        rel = p.relative_to(ROOT).as_posix()
        if rel in HF_FIELD.get(name, ()) or rel == "tests/test_vocabulary.py":
            continue
        for i, line in enumerate(p.read_text(errors="replace").splitlines(), 1):
            if pattern.search(line):
                hits.append(f"{rel}:{i}: {line.strip()[:100]}")
    assert not hits, f"retired name `{name}` still used:\n" + "\n".join(hits[:30])


def test_zoo_metadata_uses_the_vocabulary():
    from course_llm.zoo import metadata
    import json

    train_config = json.loads(metadata("gpt-shakespeare-char")["train_config"])
    assert {"seq_len", "adam_eps", "max_grad_norm"} <= set(train_config)
    assert not set(RETIRED) & set(train_config) and "eps" not in train_config

"""The package's import graph: every arrow runs downward, and no module imports another's private name.

The layers, lowest first (DEVELOPERS.md):
core -> data -> tokenizers -> attention/layers -> models -> generate/train -> post-training -> grading.
A module may import modules of its own layer or of lower layers, never of a higher one. Each module's
layer is written down in `RANK` below, so a new module must be placed there before this test passes.
The graph is read with `ast` from the source files (nothing is imported), so the test is fast.
"""
import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "course_llm"

LAYERS = ["core", "data", "tokenizers", "attention/layers", "models", "generate/train",
          "post-training", "grading"]
CORE, DATA, TOKENIZERS, LAYER, MODELS, TRAIN, POST, GRADING = range(len(LAYERS))

RANK = {
    "course_llm": CORE, "core": CORE,
    "data": DATA, "optim": DATA,                 # optim: the small shared loop (A.2), used by models
    "sentence_pairs": DATA,                      # BERT's NSP pairs (9.6): only core
    "bpe": TOKENIZERS, "pretokenizer": TOKENIZERS, "bpe_ranks": TOKENIZERS, "bpe_files": TOKENIZERS, "fast_bpe": TOKENIZERS,
    "bpe_special": TOKENIZERS, "bert_normalizer": TOKENIZERS,
    "tokenizers": TOKENIZERS, "wordpiece": TOKENIZERS, "wordpiece_train": TOKENIZERS,
    "attention": LAYER, "masks": LAYER, "kv_cache": LAYER, "layers": LAYER, "moe": LAYER, "flash": LAYER,
    "positions": LAYER, "norms": LAYER, "feedforward": LAYER,
    "ngram": MODELS, "bow": MODELS, "word2vec": MODELS, "rnn": MODELS, "rnn_cells": MODELS,
    "rnn_layers": MODELS, "rnn_classifier": MODELS, "elmo": MODELS, "gpt": MODELS,
    "bert": MODELS, "t5": MODELS, "relative_bias": LAYER, "t5_hf": MODELS, "t5_config": MODELS, "bert_config": MODELS, "bert_hf": MODELS, "vit": MODELS, "gpt_config": MODELS, "gpt_hf": MODELS,
    "gguf": MODELS,
    "generate": TRAIN, "speculative": TRAIN, "trainer": TRAIN, "train": TRAIN, "train_config": TRAIN,
    "checkpoints": TRAIN, "distributed": TRAIN, "train_eval": TRAIN, "mlm": TRAIN, "objectives": TRAIN, "zoo": TRAIN,
    "chat": POST, "sft": POST, "instructions": POST, "rlhf": POST, "ppo": POST, "logprobs": POST, "icl": POST, "icl_tasks": POST, "rag": POST, "retrieval": POST,
    "finetune": POST, "pretrained": POST, "quantize": POST, "scaling": POST, "ssl": POST, "probes": POST,
    "lora": POST, "grpo": POST, "evals": POST, "eval_tasks": POST,
    "grading": GRADING,                          # the grader subpackage, every module in it
}


def module_name(path):
    """`course_llm/grading/core.py` -> `course_llm.grading.core`; a package's `__init__` -> the package."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))
           if not p.stem.startswith("_") or p.stem == "__init__"}


def rank(module):
    """The layer of `module`, from `RANK` (by its top-level name under course_llm)."""
    key = "course_llm" if module == "course_llm" else module.split(".")[1]
    if key not in RANK:
        pytest.fail(f"{module} has no layer: add {key!r} to RANK in tests/test_architecture.py, "
                    f"one of {LAYERS}: it may then import modules of that layer or lower ones only")
    return RANK[key]


def imports(module):
    """(line, imported module, imported name or None) for every course_llm import in `module`."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name, None) for a in node.names if a.name.split(".")[0] == "course_llm"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "course_llm":
                continue
            for a in node.names:
                if f"{target}.{a.name}" in MODULES:           # `from . import core`: a module
                    found.append((node.lineno, f"{target}.{a.name}", None))
                else:
                    found.append((node.lineno, target, a.name))
    return found


def test_graph_is_read():
    assert {"course_llm.core", "course_llm.kv_cache", "course_llm.grading.core"} <= set(MODULES)
    assert (9, "course_llm.core", "check_int") in imports("course_llm.kv_cache")


def test_every_module_has_a_layer():
    for module in MODULES:
        rank(module)


def test_arrows_run_downward():
    upward = [f"{m} (line {line}, {LAYERS[rank(m)]}) imports {target} ({LAYERS[rank(target)]})"
              for m in MODULES for line, target, _ in imports(m) if rank(target) > rank(m)]
    assert not upward, "imports that run upward:\n" + "\n".join(upward)


def test_kv_cache_below_the_models():
    assert rank("course_llm.kv_cache") < rank("course_llm.t5") < rank("course_llm.generate")
    assert ("course_llm.generate" not in
            {target for _, target, _ in imports("course_llm.t5")}), "t5 must import KVCache from kv_cache"


def test_no_private_names_across_modules():
    bad = [f"{m} (line {line}) imports {name} from {target}"
           for m in MODULES for line, target, name in imports(m)
           if target != m and (name or "").startswith("_") and not name.startswith("__")
           or any(part.startswith("_") and part != "__init__" for part in target.split("."))]
    assert not bad, "private names imported from another module:\n" + "\n".join(bad)


NOTEBOOKS = Path(__file__).resolve().parents[1] / "nbs"


def exported_cells():
    import json

    for path in sorted(NOTEBOOKS.rglob("*.ipynb")):
        for i, cell in enumerate(json.loads(path.read_text())["cells"]):
            src = "".join(cell["source"])
            if cell["cell_type"] == "code" and src.startswith("#| export"):
                yield f"{path.relative_to(NOTEBOOKS)} cell {i}", src


def test_one_definition_per_exported_cell():
    """An exported cell holds one function or class (and the statements that go with it), so a
    reader meets the library a definition at a time and nbdev's cell markers name each one."""
    crowded = []
    for where, src in exported_cells():
        body = ast.parse(src).body
        n = sum(isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) for d in body)
        if n > 1:
            crowded.append(f"{where}: {n} definitions")
    assert not crowded, "split these exported cells, one definition each:\n" + "\n".join(crowded)


def test_no_import_cycles():
    """Issue #32 item 3: no module reaches itself through imports, function-level ones included
    (`imports` walks the whole tree). Within one layer the arrows may point either way, so the
    layers alone do not rule cycles out; this test does."""
    graph = {m: {t for _, t, _ in imports(m) if t in MODULES and t != m} for m in MODULES}
    cycles, state = [], {}

    def visit(m, path):
        state[m] = "open"
        for t in sorted(graph[m]):
            if state.get(t) == "open":
                cycles.append(" -> ".join(path[path.index(t):] + [t]))
            elif t not in state:
                visit(t, path + [t])
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert not cycles, "import cycles:\n" + "\n".join(cycles)

"""Exercises that are not copies of the book (issue #36, item 6), for 06_rope, 08_top_p,
09_patchify, 10_span_corruption and 11_bm25: each asks for a variant of a function the book
shows, and a submission made of the book's code for the ORIGINAL function scores nothing.

The oracle is the book itself: the teaching function is taken from its chapter notebook
(`nbs/NN_*.ipynb`), with every top-level helper and import of that notebook it needs, and the
submission only adapts it by renaming, taking the variant's signature and dropping the new
argument (the most a copy-paste can do without understanding the variant). Before it is
graded, the copied code is run once on a small input, so that a copy that merely fails to load
cannot pass this test.

`CAP` is the most such a copy may score: the points of the checks that do not test the
variant's new part. It is 0 for all five, because in each exercise the basic check (the first
one, which every other check requires) tests the new part:
- 06_rope, `equals_rotation_matrix`: rotary_dim < d (partial rotation, frequencies over
  rotary_dim);
- 08_top_p, `values`: some row where min_keep keeps more than the nucleus;
- 09_patchify, `square_grey_images`: patches back into images, the inverse of patchify;
- 10_span_corruption, `random_masks`: the text from the inputs and targets, the inverse;
- 11_bm25, `values`: BM25+'s idf ln((N + 1) / n_q) and its delta.
"""

from __future__ import annotations

import ast
import json

import pytest
import torch
from grading_support import ROOT, grade_trusted

from course_llm.grading import get_exercise

# exercise -> (chapter notebook, the book's function, the variant's adapter, a small call
# of the book's function that must run)
VARIANTS = {
    "06_rope": [
        ("06b_positions", "rope",
         ("def apply_partial_rope(x, positions, rotary_dim, base=10000.0):\n"
          "    return rope(x, positions, base)\n"),
         "rope(torch.ones(1, 3, 4), torch.arange(3))"),
        ("06b_positions", "apply_rope",
         ("def apply_partial_rope(x, positions, rotary_dim, base=10000.0):\n"
          "    return apply_rope(x, positions, base, interleaved=True)\n"),
         "apply_rope(torch.ones(1, 3, 4), torch.arange(3))"),
    ],
    "08_top_p": [
        ("08_decoding", "top_p_filter",
         "def top_p_min_keep(logits, p, min_keep=1):\n    return top_p_filter(logits, p)\n",
         "top_p_filter(torch.tensor([[2.0, 1.0, 0.0]]), 0.5)"),
    ],
    "09_patchify": [
        ("09c_vit", "patchify",
         ("def unpatchify(patches, patch_size, height, width):\n"
          "    return patchify(patches, patch_size)\n"),
         "patchify(torch.ones(1, 1, 4, 4), 2)"),
    ],
    "10_span_corruption": [
        ("10b_objectives", "span_corruption",
         "def span_reassemble(inputs, targets):\n    return span_corruption(inputs, targets)\n",
         "span_corruption(['a', 'b'], [False, True])"),
    ],
    "11_bm25": [
        ("11c_retrieval", "bm25_scores",
         ("def bm25_plus_scores(query, docs, k1=1.5, b=0.75, delta=1.0):\n"
          "    return bm25_scores(query, docs, k1, b)\n"),
         "bm25_scores(['a'], [['a', 'b'], ['c']])"),
    ],
}
CAP = dict.fromkeys(VARIANTS, 0)


def book_code(notebook: str, function: str) -> str:
    """`function`'s definition in the chapter notebook, after the top-level definitions and
    imports of that notebook it reaches (transitively), in notebook order."""
    cells = json.loads((ROOT / "nbs" / f"{notebook}.ipynb").read_text())["cells"]
    nodes = []
    for cell in cells:
        if cell["cell_type"] != "code":
            continue
        code = "\n".join(line for line in "".join(cell["source"]).splitlines()
                         if not line.startswith(("%", "!")))
        try:
            nodes += ast.parse(code).body
        except SyntaxError:
            continue
    defs, imports = {}, {}
    for node in nodes:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            defs[node.name] = node                                   # the last definition wins
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                imports[(alias.asname or alias.name).split(".")[0]] = node
    assert function in defs, f"nbs/{notebook}.ipynb no longer defines {function}"
    wanted, todo = set(), [function]
    while todo:
        name = todo.pop()
        if name in wanted:
            continue
        wanted.add(name)
        if name in defs:
            todo += [n.id for n in ast.walk(defs[name]) if isinstance(n, ast.Name)]
    chosen = [node for node in nodes if (node in defs.values() and node.name in wanted)
              or node in {imports[n] for n in wanted if n in imports}]
    return "\n\n\n".join(dict.fromkeys(ast.unparse(node) for node in chosen)) + "\n"


CASES = [(name, i) for name, entries in VARIANTS.items() for i in range(len(entries))]


@pytest.mark.parametrize("name, i", CASES, ids=[f"{n}-{VARIANTS[n][i][1]}" for n, i in CASES])
def test_the_books_code_renamed_scores_nothing_on_the_variant(name, i, tmp_path):
    notebook, function, adapter, probe = VARIANTS[name][i]
    assert adapter.split("(")[0].removeprefix("def ") in get_exercise(name).functions
    code = book_code(notebook, function)
    namespace = {}
    exec(code, namespace)                                            # noqa: S102 - the book's code
    assert eval(probe, {"torch": torch, **namespace}) is not None    # the book's code runs
    path = tmp_path / f"{name}_book_copy.py"
    path.write_text(f"# course-llm exercise: {name}\nimport torch\n\n{code}\n\n{adapter}")
    for report in grade_trusted([path], [None, 1, 2])[0]:
        assert report.score <= CAP[name], f"seed {report.seed}:\n{report.table()}"

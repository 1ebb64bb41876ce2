"""Exercises that are not copies of the book (issue #36, item 6), for 02_bpe_merge,
03_lstm_cell, 05_masked_attention and 06_rms_norm (01_ngram_counts: test_grading_variants_v3.py):
a submission made of the book's
visible teaching code for the ORIGINAL function, adapted only by renaming (and, where the
variant's signature grew, by ignoring the new argument), earns at most the points of the checks
that do not test the variant's new part.

The teaching code is read from the chapter's notebook: its imports and every undecorated
top-level ``def`` (so that helpers such as ``_merge`` come along), followed by the renaming.
"""

from __future__ import annotations

import ast
import json

import pytest
from grading_support import ROOT, grade_trusted

from course_llm.grading import get_exercise


def book_code(notebook: str) -> str:
    """The imports and undecorated top-level functions of ``nbs/<notebook>.ipynb``."""
    cells = json.loads((ROOT / "nbs" / f"{notebook}.ipynb").read_text())["cells"]
    imports, defs = [], []
    for cell in cells:
        if cell["cell_type"] != "code":
            continue
        code = "\n".join(line for line in "".join(cell["source"]).splitlines()
                         if not line.startswith(("%", "!")))
        try:
            tree = ast.parse(code)
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                imports.append(ast.unparse(node))
            elif isinstance(node, ast.FunctionDef) and not node.decorator_list:
                defs.append(ast.unparse(node))
    return "\n".join(imports) + "\n\n\n" + "\n\n\n".join(defs) + "\n"


# exercise -> (notebook, the renaming, the checks a renamed copy may pass: they do not test the
# variant's new part)
COPIES = {
    # the variant records positions; the book's functions return counts and a bare list
    "02_bpe_merge": ("02b_bpe", ("pair_positions = get_pair_counts\n"
                                 "merge_with_positions = merge\n"), set()),
    # the variant adds peepholes; the book's step has none: only the shapes are right
    "03_lstm_cell": ("03c_rnn_cells",
                     ("def peephole_lstm_cell(u, h, c, W_u, W_h, b, p):\n"
                      "    return lstm_step(u, h, c, W_u, W_h, b)\n"),
                     {"returns_two_states"}),
    # the variant adds a bias and a key-padding mask; without them the book's attention is right
    "05_masked_attention": ("05_attention",
                            ("def masked_attention(q, k, v, bias=None, key_padding_mask=None):\n"
                             "    return attention(q, k, v)[0]\n"),
                            {"unmasked", "scaled_by_sqrt_dk"}),
    # the variant scales by 1 + weight in float32; the book's RMSNorm scales by gamma
    "06_rms_norm": ("06c_norms", "", set()),
}
# exercises whose variant is not written yet (each a reason); the test expects them to fail
PENDING: dict = {}  # 01_ngram_counts has its variant now: tests/test_grading_variants_v3.py
PLAIN_RENAMES = {  # the same copies without the adaptation of the signature: nothing passes
    "03_lstm_cell": "peephole_lstm_cell = lstm_step\n",
    "05_masked_attention": "def masked_attention(q, k, v, mask=None):\n"
                           "    return attention(q, k, v, mask)[0]\n",
}


def _grade(name: str, code: str, folder):
    path = folder / f"{name}_book_copy.py"
    path.write_text(f"# course-llm exercise: {name}\n" + code)
    return grade_trusted([path], [None, 1, 2])[0]


@pytest.mark.parametrize("name", sorted(COPIES))
def test_the_books_code_renamed_earns_only_the_unchanged_checks(name, tmp_path):
    notebook, renaming, allowed = COPIES[name]
    exercise = get_exercise(name)
    assert allowed <= {c.name for c in exercise.checks}
    for report in _grade(name, book_code(notebook) + renaming, tmp_path):
        passed = {r.name for r in report.results if r.passed}
        assert passed <= allowed, report.table()
        assert report.score <= sum(c.points for c in exercise.checks if c.name in allowed)
        assert report.score < exercise.max_score / 2, report.table()


@pytest.mark.parametrize("name", sorted(PLAIN_RENAMES))
def test_the_books_code_only_renamed_scores_zero(name, tmp_path):
    notebook = COPIES[name][0]
    for report in _grade(name, book_code(notebook) + PLAIN_RENAMES[name], tmp_path):
        # the variant's first check calls the function with the original arguments only
        passed = {r.name for r in report.results if r.passed}
        assert passed <= COPIES[name][2], report.table()


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(reason=why, strict=True))
                                  for n, why in PENDING.items()])
def test_pending_exercises_have_a_variant(name, tmp_path):
    code = book_code("01_language_models") + "count_ngrams_and_contexts = count_ngrams_simple\n"
    reports = _grade(name, code, tmp_path)
    assert all(r.score < get_exercise(name).max_score / 2 for r in reports)

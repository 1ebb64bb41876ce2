"""Exercises that are not copies of the book (issue #36, item 6): a submission that only hands the
work to the package's function of the same name, or to the book's teaching function of the same
name, scores 0 on every exercise (the forbidden-call guard and the exercise's variant both help).

The teaching functions are taken from the chapters' notebooks (`nbs/NN_*.ipynb`): every top-level
``def`` of an exercise's function name, with the imports of its notebook.
"""

from __future__ import annotations

import ast
import importlib
import json
import pkgutil

import pytest
from grading_support import EXERCISES, ROOT, grade_trusted

import course_llm
from course_llm.grading import get_exercise

# exercises whose variant is not written yet (each a reason); the test expects them to fail
NOT_YET: dict = {}


def package_homes(function: str) -> list:
    """The modules of course_llm (outside the grader) that define `function`."""
    homes = []
    for info in pkgutil.walk_packages(course_llm.__path__, "course_llm."):
        if ".grading" in info.name or info.name.endswith("_modidx"):
            continue
        try:
            module = importlib.import_module(info.name)
        except Exception:  # noqa: BLE001, S112 - an optional dependency missing
            continue
        found = getattr(module, function, None)
        if callable(found) and getattr(found, "__module__", "") == info.name:
            homes.append(info.name)
    return homes


def teaching_copies(function: str) -> list:
    """(notebook, source) of every top-level ``def function`` in the chapters, with its imports."""
    copies = []
    for path in sorted((ROOT / "nbs").glob("[0-9][0-9]_*.ipynb")):
        cells = ["".join(c["source"]) for c in json.loads(path.read_text())["cells"]
                 if c["cell_type"] == "code"]
        imports, defs = [], []
        for cell in cells:
            code = "\n".join(line for line in cell.splitlines() if not line.startswith(("%", "!")))
            try:
                tree = ast.parse(code)
            except SyntaxError:
                continue
            for node in tree.body:
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    imports.append(ast.unparse(node))
                elif isinstance(node, ast.FunctionDef) and node.name == function:
                    defs.append(ast.unparse(node))
        copies += [(path.stem, "\n".join(imports + [d])) for d in defs]
    return copies


def submissions(name: str, folder) -> list:
    """The delegating submissions of exercise `name`: one per package home, one per teaching copy."""
    exercise = get_exercise(name)
    header = f"# course-llm exercise: {name}\n"
    found = []
    for function in exercise.functions:
        for home in package_homes(function):
            code = (f"from {home} import {function} as _theirs\n\n\n"
                    f"def {function}(*args, **kwargs):\n    return _theirs(*args, **kwargs)\n")
            found.append((f"{home}.{function}", code))
        for stem, source in teaching_copies(function):
            found.append((f"nbs/{stem}.ipynb: {function}", source + "\n"))
    paths = []
    for i, (label, code) in enumerate(found):
        path = folder / f"{name}_copy_{i}.py"
        path.write_text(header + code)
        paths.append((label, path))
    return paths


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(reason=NOT_YET[n], strict=True))
                                  if n in NOT_YET else n for n in EXERCISES])
def test_a_copy_of_the_package_or_the_book_scores_zero(name, tmp_path):
    copies = submissions(name, tmp_path)
    if not copies:
        return
    reports = grade_trusted([p for _, p in copies], [None])
    scored = {label: reps[0].score for (label, _), reps in zip(copies, reports)}
    assert all(score == 0 for score in scored.values()), f"{name}: {scored}"

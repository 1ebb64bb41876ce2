"""Grades that mean something (issue #36): hints point without pasting the solution, the seeds
are fixed per exercise (a student's `check()` and the official grade agree), and a known-wrong
submission scores the same on every seed.

The oracle of the hint test is the reference solution itself: its distinctive code lines (the
normalized lines of the bodies of the functions the exercise asks for, and the right-hand sides of
their assignments, of at least 20 characters) must not appear in any hint.
"""

from __future__ import annotations

import ast
import json
import re

import pytest
from grading_support import EXERCISES, FIXTURES, grade_trusted, reference

from course_llm.grading import get_exercise
from course_llm.grading.core import DEFAULT_SEED, check

MIN_CHARS = 20


def _normal(text: str) -> str:
    """Code without blanks and with one kind of quote, so that spacing and quoting never hide a match."""
    return re.sub(r"\s+", "", text).replace('"', "'")


def distinctive_lines(name: str) -> set:
    """The normalized code lines (>= MIN_CHARS) of the reference's bodies of the exercise's functions."""
    nb = json.loads(reference(name).read_text())
    source = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    source = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!")))
    wanted = set(get_exercise(name).functions)
    lines = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and node.name in wanted:
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None),
                                                                      ast.Constant):
                body = body[1:]                                       # the docstring
            for stmt in (s for part in body for s in ast.walk(part) if isinstance(s, ast.stmt)):
                text = ast.unparse(stmt).splitlines()[0]
                pieces = [text]
                if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and stmt.value:
                    pieces.append(ast.unparse(stmt.value))
                if isinstance(stmt, ast.Return) and stmt.value is not None:
                    pieces.append(ast.unparse(stmt.value))
                lines |= {_normal(p) for p in pieces if len(_normal(p)) >= MIN_CHARS}
    return lines


@pytest.mark.parametrize("name", EXERCISES)
def test_no_hint_pastes_a_line_of_the_solution(name):
    lines = distinctive_lines(name)
    for chk in get_exercise(name).checks:
        hint = _normal(chk.hint)
        pasted = sorted(line for line in lines if line in hint)
        assert not pasted, f"{name}: the hint of {chk.name} contains the solution's {pasted}"


def test_the_default_seed_is_fixed_and_check_agrees_with_the_grade():
    namespace = {}
    exec((FIXTURES / "05_masked_attention_bug_mask_after_softmax.py").read_text(), namespace)  # noqa: S102
    first = check("05_masked_attention", namespace=namespace, quiet=True)
    second = check("05_masked_attention", namespace=namespace, quiet=True)
    assert first.seed == second.seed == DEFAULT_SEED
    official = grade_trusted([FIXTURES / "05_masked_attention_bug_mask_after_softmax.py"], [None])[0][0]
    assert official.seed == DEFAULT_SEED
    assert [(r.name, r.passed, r.message) for r in first.results] == [
        (r.name, r.passed, r.message) for r in official.results]
    assert str(DEFAULT_SEED) in first.table()


WRONG = sorted(FIXTURES.glob("*_bug_*.py"))


def seeds_for(bug) -> list:
    """Seven seeds for an exercise's planted bug; three for a project's, whose checks train models."""
    return [None, 1, 2] if bug.stem.startswith("project_") else [None, 1, 2, 3, 4, 5, 6]


@pytest.fixture(scope="module")
def over_seeds(request):
    return {bug: grade_trusted([bug], seeds_for(bug))[0] for bug in WRONG}


@pytest.mark.parametrize("bug", WRONG, ids=lambda p: p.stem)
def test_a_wrong_submission_scores_the_same_on_every_seed(bug, over_seeds):
    scores = {r.seed: r.score for r in over_seeds[bug]}
    assert len(set(scores.values())) == 1, f"{bug.stem}: {scores}"
    failed = {tuple(c.name for c in r.results if not c.passed) for r in over_seeds[bug]}
    assert len(failed) == 1, f"{bug.stem}: {failed}"


@pytest.mark.parametrize("bug, first", [("07_block_forward_bug_scale_by_d_model", "matches_the_block"),
                                        ("05_masked_attention_bug_scale_by_dk", "unmasked")])
def test_one_bug_is_charged_once(bug, first):
    report = grade_trusted([FIXTURES / f"{bug}.py"], [None])[0][0]
    failed = [r for r in report.results if not r.passed]
    assert failed[0].name == first and failed[0].hint, report.table()
    for later in failed[1:]:  # skipped, after `first` or a check skipped because of it
        found = re.fullmatch(r"skipped: fix (.+) first", later.message)
        assert found and not later.hint, report.table()
        assert set(found.group(1).split(", ")) <= {r.name for r in failed}, report.table()


# --- one bug, one charge (issue #36 item 4), for every planted bug of every chapter -------------
# Fixtures that may still be charged twice, each with the reason (expected to fail). A hidden
# check `requires=` the visible checks of its part, so a bug found by a visible check is not
# charged again by its hidden twin.
ONE_CHARGE_PENDING: dict = {}


@pytest.mark.parametrize("bug", [pytest.param(b, marks=pytest.mark.xfail(reason=ONE_CHARGE_PENDING[b.stem],
                                                                        strict=False))
                                 if b.stem in ONE_CHARGE_PENDING else b for b in WRONG],
                         ids=lambda p: p.stem)
def test_the_first_failure_names_the_bug_and_every_later_one_is_skipped(bug, over_seeds):
    """The first failing check (in the exercise's order) says what the fixture's ``# expect-hint:``
    names; every later failing check is not run and says "skipped: fix X first", X being checks
    that failed before it, with no hint of its own (seeds default, 1 and 2)."""
    from grading_support import header

    hint = header(bug, "expect-hint").lower()
    for report in over_seeds[bug][:3]:
        failed = [r for r in report.results if not r.passed]
        assert failed, f"{bug.stem}: nothing failed\n{report.table()}"
        first = failed[0]
        assert hint in f"{first.message}\n{first.hint}".lower(), (
            f"{bug.stem}: the first failing check, {first.name}, does not say {hint!r}\n"
            f"{report.table()}")
        before = set()
        for later in failed[1:]:
            before.add(failed[failed.index(later) - 1].name)
            found = re.fullmatch(r"skipped: fix (.+) first", later.message)
            assert found and not later.hint, (
                f"{bug.stem}: {later.name} is charged again instead of skipped\n{report.table()}")
            assert set(found.group(1).split(", ")) <= before, report.table()

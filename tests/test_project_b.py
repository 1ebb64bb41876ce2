"""Project B (`project_b_finetune`, issue #36 item 2): the reference grades at full marks, the
generated student notebook at zero, and each planted bug loses exactly its part's checks.

The oracles are the checks' own: a brute-force loop of `F.cross_entropy` over the response
positions, autograd on the whole batch, a float64 loop for the clipped policy loss, the Wilson
bounds found by bisection on the score test, McNemar's p-value by enumerating binomial outcomes,
and, for part 5, a greedy accuracy that the check measures itself on held-out strings after
training the student's code (and, for GRPO, its own SFT start). Training is the expensive part,
so the planted bugs of parts 1 to 4 are graded on the visible checks only, those of part 5 with
the hidden checks, all in this process; one sandboxed `course-llm grade` run covers the
reference end to end (with `--gradescope`).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from grading_support import FIXTURES, ROOT, grade_trusted, header, reference, student

from course_llm.grading import get_exercise

NAME = "project_b_finetune"
EXERCISE = get_exercise(NAME)
BUGS = sorted(FIXTURES.glob(f"{NAME}_bug_*.py"))
PARTS = {  # the checks of each part, as the notebook's table lists them
    1: {"nll_values", "nll_ragged"},
    2: {"grads_one_micro_batch", "grads_accumulated"},
    3: {"unclipped", "token_mean", "clipping"},
    4: {"wilson_values", "wilson_edges", "mcnemar_values", "mcnemar_no_evidence"},
    5: {"sft_gain", "grpo_gain"},
}
HIDDEN = {c.name for c in EXERCISE.checks if c.visibility != "visible"}


def test_the_parts_cover_every_check_and_carry_the_stated_points():
    assert set().union(*PARTS.values()) == {c.name for c in EXERCISE.checks}
    points = {part: sum(c.points for c in EXERCISE.checks if c.name in names)
              for part, names in PARTS.items()}
    assert points == {1: 3, 2: 3, 3: 5, 4: 6, 5: 10} and EXERCISE.max_score == 27
    assert HIDDEN == {"wilson_edges", "sft_gain", "grpo_gain"}


def test_reference_scores_full_marks_on_two_seeds_and_the_stub_zero():
    ref_reports, stub_reports = grade_trusted([reference(NAME), student(NAME)], [None, 1])
    for report in ref_reports:
        assert report.score == report.max_score == 27, report.table()
    for report in stub_reports:
        assert report.score == 0, report.table()
        assert "NotImplementedError" in report.results[0].message, report.table()
        assert all("NotImplementedError" in r.message or r.message.startswith("skipped: fix ")
                   for r in report.results), report.table()


def test_there_is_a_planted_bug_in_every_part():
    parts = {part for bug in BUGS for part, names in PARTS.items()
             if set(header(bug, "expect-fail").split()) & names}
    assert parts == set(PARTS)


@pytest.mark.parametrize("bug", BUGS, ids=lambda p: p.stem)
def test_a_planted_bug_loses_exactly_its_checks(bug):
    expected = set(header(bug, "expect-fail").split())
    first_part = min(part for part, names in PARTS.items() if expected & names)
    hidden = first_part == 5  # part 5's bugs need the (slow) hidden checks
    report = grade_trusted([bug], [None], hidden=hidden)[0][0]
    failed = [r for r in report.results if not r.passed]
    assert {r.name for r in failed} == (expected if hidden else expected - HIDDEN), report.table()
    assert header(bug, "expect-hint").lower() in f"{failed[0].message}\n{failed[0].hint}".lower()
    # checks of a later part fail only as "skipped: fix ... first" (one bug, one charge)
    for r in failed:
        if r.name not in PARTS[first_part]:
            assert r.message.startswith("skipped: fix "), report.table()


def test_the_reference_in_a_sandboxed_grade_and_its_gradescope_file(tmp_path):
    out = tmp_path / "results.json"
    done = subprocess.run(
        [str(Path(sys.executable).parent / "course-llm"), "grade", str(reference(NAME)),
         "--json", str(tmp_path / "grade.json"), "--gradescope", str(out)],
        capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr
    grade = json.loads((tmp_path / "grade.json").read_text())
    assert grade["score"] == grade["max_score"] == 27, done.stdout
    tests = json.loads(out.read_text())["tests"]
    assert len(tests) == len(EXERCISE.checks) and all(t["score"] == t["max_score"] for t in tests)
    hidden = {t["name"].split(": ")[-1] for t in tests if t.get("visibility") == "hidden"}
    assert hidden == HIDDEN

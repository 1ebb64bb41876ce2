"""Project D (`project_d_eval`, issue #36 item 2): the reference grades at full marks, the
generated student notebook at zero, and each planted bug loses exactly its part's checks.

The oracles are the checks' own: a brute-force scan of every window of the reference text for
the n-gram overlap, `log_softmax` read entry by entry for the choice scores, a loop over the
resamples (same generator seed) for the cluster bootstrap, and an enumeration of every sign
pattern (and the binomial closed form, cross-checked against it) for the sign test. The
planted bugs are graded in this process; one sandboxed `course-llm grade` run covers the
reference end to end, hidden checks included (with `--gradescope`).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from grading_support import FIXTURES, ROOT, grade_trusted, header, reference, student

from course_llm.grading import get_exercise

NAME = "project_d_eval"
EXERCISE = get_exercise(NAME)
BUGS = sorted(FIXTURES.glob(f"{NAME}_bug_*.py"))
PARTS = {  # the checks of each part, as the notebook's table lists them
    1: {"overlap_values", "overlap_short", "heldout_filter", "heldout_dedup"},
    2: {"scores_values", "scores_padding", "mc_correct_values"},
    3: {"bootstrap_items", "bootstrap_clusters"},
    4: {"sign_test_enumerated", "sign_test_binomial", "sign_test_no_evidence"},
    5: {"held_out_contamination", "held_out_coverage", "held_out_scores"},
}
HIDDEN = PARTS[5]


def test_the_parts_cover_every_check_and_carry_the_stated_points():
    assert set().union(*PARTS.values()) == {c.name for c in EXERCISE.checks}
    points = {
        part: sum(c.points for c in EXERCISE.checks if c.name in names)
        for part, names in PARTS.items()
    }
    assert points == {1: 5, 2: 4, 3: 4, 4: 4, 5: 3} and EXERCISE.max_score == 20
    assert {c.name for c in EXERCISE.checks if c.visibility != "visible"} == HIDDEN


def test_reference_scores_full_marks_on_two_seeds_and_the_stub_zero():
    (ref_reports, stub_reports) = grade_trusted(
        [reference(NAME), student(NAME)], [None, 1]
    )
    for report in ref_reports:
        assert report.score == report.max_score == 20, report.table()
    for report in stub_reports:
        assert report.score == 0, report.table()
        assert "NotImplementedError" in report.results[0].message, report.table()


def test_there_is_a_planted_bug_in_every_visible_part():
    parts = {
        part
        for bug in BUGS
        for part, names in PARTS.items()
        if (set(header(bug, "expect-fail").split()) - HIDDEN) & names
    }
    assert parts == {1, 2, 3, 4}


@pytest.mark.parametrize("bug", BUGS, ids=lambda p: p.stem)
def test_a_planted_bug_loses_exactly_its_checks(bug):
    expected = set(header(bug, "expect-fail").split()) - HIDDEN  # hidden ones: skipped
    parts = [part for part, names in PARTS.items() if expected & names]
    report = grade_trusted([bug], [None], hidden=False)[0][0]
    failed = [r for r in report.results if not r.passed]
    assert {r.name for r in failed} == expected, report.table()
    assert (
        header(bug, "expect-hint").lower()
        in f"{failed[0].message}\n{failed[0].hint}".lower()
    )
    assert len(parts) == 1 and expected <= PARTS[parts[0]], report.table()


def test_the_reference_in_a_sandboxed_grade_and_its_gradescope_file(tmp_path):
    out = tmp_path / "results.json"
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "course-llm"),
            "grade",
            str(reference(NAME)),
            "--json",
            str(tmp_path / "grade.json"),
            "--gradescope",
            str(out),
        ],
        check=False,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    grade = json.loads((tmp_path / "grade.json").read_text())
    assert grade["score"] == grade["max_score"] == 20, done.stdout
    tests = json.loads(out.read_text())["tests"]
    assert len(tests) == len(EXERCISE.checks)
    assert all(t["score"] == t["max_score"] for t in tests)
    hidden = {t["name"].split(": ")[-1] for t in tests if t["visibility"] == "hidden"}
    assert hidden == HIDDEN

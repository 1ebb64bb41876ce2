"""Project A (`project_a_pretrain`, issue #36 item 2): the reference grades at full marks, the
generated student notebook at zero, and each planted bug loses exactly its part's checks.

The oracles are the checks' own: a brute-force BPE trainer (cross-checked against
`course_llm.bpe.train_merges`), the merges applied in the order they were learned
(cross-checked against `encode_with_merges`), `F.cross_entropy` on the student's logits, and a
loss the check computes itself from the log-probabilities the student's trained model gives on
held-out contexts. Training is the expensive part (a few seconds per check), so the planted bugs
are graded on the visible checks only, in this process, and one sandboxed `course-llm grade`
run covers the reference end to end (with `--gradescope`).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from grading_support import FIXTURES, ROOT, grade_trusted, header, reference, student

from course_llm.grading import get_exercise

NAME = "project_a_pretrain"
EXERCISE = get_exercise(NAME)
BUGS = sorted(FIXTURES.glob(f"{NAME}_bug_*.py"))
# one planted bug per part here (and the one that skips training); tests/test_grading_bugs.py
# grades every fixture under three fresh seeds
PER_PART = [
    FIXTURES / f"{NAME}_bug_{bug}.py"
    for bug in (
        "first_tie",
        "strict_utf8",
        "summed_loss",
        "no_causal_mask",
        "probabilities",
    )
]
PARTS = {  # the checks of each part, as the notebook's table lists them
    1: {"merges_match", "ties", "within_chunks", "min_count_stop"},
    2: {"encode_matches", "encode_rank_order", "decode_values", "decode_partial_utf8"},
    3: {"logits_shape", "causal", "loss_matches"},
    4: {"trained_loss", "trained_loss_held_out"},
}


def test_the_parts_cover_every_check_and_carry_the_stated_points():
    assert set().union(*PARTS.values()) == {c.name for c in EXERCISE.checks}
    points = {
        part: sum(c.points for c in EXERCISE.checks if c.name in names)
        for part, names in PARTS.items()
    }
    assert points == {1: 5, 2: 5, 3: 4, 4: 6} and EXERCISE.max_score == 20
    assert [c.name for c in EXERCISE.checks if c.visibility != "visible"] == [
        "trained_loss_held_out"
    ]


def test_reference_scores_full_marks_on_two_seeds_and_the_stub_zero():
    (ref_reports, stub_reports) = grade_trusted(
        [reference(NAME), student(NAME)], [None, 1]
    )
    for report in ref_reports:
        assert report.score == report.max_score == 20, report.table()
    for report in stub_reports:
        assert report.score == 0, report.table()
        assert "NotImplementedError" in report.results[0].message, report.table()


def test_there_is_a_planted_bug_in_every_part():
    parts = {
        part
        for bug in BUGS
        for part, names in PARTS.items()
        if set(header(bug, "expect-fail").split()) & names
    }
    assert parts == set(PARTS)


@pytest.mark.parametrize("bug", PER_PART, ids=lambda p: p.stem)
def test_a_planted_bug_loses_exactly_its_checks(bug):
    expected = set(header(bug, "expect-fail").split())
    parts = [part for part, names in PARTS.items() if expected & names]
    hidden = {c.name for c in EXERCISE.checks if c.visibility != "visible"}
    report = grade_trusted([bug], [None], hidden=False)[0][0]
    failed = [r for r in report.results if not r.passed]
    assert {r.name for r in failed} == expected - hidden, report.table()
    assert (
        header(bug, "expect-hint").lower()
        in f"{failed[0].message}\n{failed[0].hint}".lower()
    )
    if parts == [min(parts)] and "skipped" not in " ".join(r.message for r in failed):
        # a bug inside one part costs only checks of that part
        assert expected <= PARTS[parts[0]], report.table()


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
    assert len(tests) == len(EXERCISE.checks) and all(
        t["score"] == t["max_score"] for t in tests
    )
    assert {t["visibility"] for t in tests if t["name"].endswith("held_out")} == {
        "hidden"
    }


def test_the_fallback_cases_catch_their_mistake_and_no_other():
    """The cases a check uses when 300 random draws found none (never seen, but valid)."""
    from course_llm.grading.checks import project_a as P

    def merges(case, **mistake):
        return P._brute_merges(*case, **mistake)

    for case, same, differ in [
        (("abababcabcabcbcd", 3, 1), [P._TIES], []),
        (("zabczabc", 1, 1), [], [P._TIES]),
        (("a ba  a ba a ba a a", 4, 1), [P._TIES], [P._NO_SPLIT]),
        (("abababcabcabcbcd", 100, 2), [P._TIES], []),
    ]:
        want = P._oracle_merges(*case)
        assert all(merges(case, **kw) == want for kw in same), case
        assert all(merges(case, **kw) != want for kw in differ), case
    for (text, pairs), same in [
        (("the then", [(116, 104), (256, 101)]), True),
        (("abc", [(98, 99), (97, 98)]), False),
    ]:
        want = P._encode_oracle(text, pairs)
        assert all((v == want) == same for v in P._leftmost_variants(text, pairs)), text

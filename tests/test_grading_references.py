"""Every registered exercise against its oracles: the reference solution scores full marks (under
two fresh seeds, in one worker) and the generated student notebook scores zero, every check
failing on its NotImplementedError."""

from __future__ import annotations

import random

import pytest

from grading_support import EXERCISES, FIXTURES, ROOT, grade_many, selected


def test_chapter_01_exercises_are_registered():
    assert {"01_ngram_counts", "01_perplexity"} <= set(EXERCISES)


def test_every_exercise_has_a_reference_a_student_notebook_and_planted_bugs():
    for name in EXERCISES:
        assert (ROOT / "exercises" / "solutions" / f"{name}.ipynb").is_file(), name
        assert (ROOT / "exercises" / f"{name}.ipynb").is_file(), name
        assert list(FIXTURES.glob(f"{name}_bug_*.py")), f"no planted bug for {name}"


@pytest.fixture(scope="module")
def reports(request):
    names = selected(request, "name")
    seeds = random.sample(range(2**31), 2)                            # two fresh seeds
    refs = [ROOT / "exercises" / "solutions" / f"{n}.ipynb" for n in names]
    stubs = [ROOT / "exercises" / f"{n}.ipynb" for n in names]
    graded = grade_many(refs + stubs, seeds)
    return dict(zip(names, graded[: len(refs)])), dict(zip(names, graded[len(refs):]))


@pytest.mark.parametrize("name", EXERCISES)
def test_reference_scores_full_marks_and_stub_zero(name, reports):
    references, stubs = reports
    assert len({r.seed for r in references[name]}) == 2
    for report in references[name]:
        assert report.score == report.max_score > 0, report.table()
    for report in stubs[name]:
        assert report.score == 0, report.table()
        assert all("NotImplementedError" in r.message for r in report.results), report.table()

"""Every registered exercise against its oracles: the reference solution scores full marks (under
two fresh seeds) and the generated student notebook scores zero, every check failing on its
NotImplementedError.

References and stubs are the course's own trusted files: they are graded in this process
(`grading_support.grade_trusted`, the worker's own code and `run_checks`). A sample is also graded
end to end in sandboxed workers and must give the same verdicts under the same seeds.
"""

from __future__ import annotations

import random

import pytest

from grading_support import EXERCISES, FIXTURES, grade_many, grade_trusted, reference, selected, student, verdicts

SANDBOXED = ["01_ngram_counts", "15_online_softmax"]


def test_chapter_01_exercises_are_registered():
    assert {"01_ngram_counts", "01_perplexity"} <= set(EXERCISES)


def test_every_exercise_has_a_reference_a_student_notebook_and_planted_bugs():
    for name in EXERCISES:
        assert reference(name).is_file(), name
        assert student(name).is_file(), name
        assert list(FIXTURES.glob(f"{name}_bug_*.py")), f"no planted bug for {name}"


def notebooks(names: list) -> list:
    """The reference notebooks of `names`, then their student notebooks."""
    return [reference(n) for n in names] + [student(n) for n in names]


def assert_reference_full_and_stub_zero(references: list, stubs: list) -> None:
    assert len({r.seed for r in references}) == 2
    for report in references:
        assert report.score == report.max_score > 0, report.table()
    for report in stubs:
        assert report.score == 0, report.table()
        # the first check fails on the stub; a check depending on a failed one is skipped
        assert "NotImplementedError" in report.results[0].message, report.table()
        assert all("NotImplementedError" in r.message or r.message.startswith("skipped: fix ")
                   for r in report.results), report.table()


@pytest.fixture(scope="module")
def reports(request):
    names = selected(request, "name")
    seeds = random.sample(range(2**31), 2)                            # two fresh seeds
    graded = grade_trusted(notebooks(names), seeds)
    return dict(zip(names, graded[: len(names)])), dict(zip(names, graded[len(names):]))


@pytest.mark.parametrize("name", EXERCISES)
def test_reference_scores_full_marks_and_stub_zero(name, reports):
    references, stubs = reports
    assert_reference_full_and_stub_zero(references[name], stubs[name])


@pytest.fixture(scope="module")
def sandboxed(request):
    names = selected(request, "sample")
    seeds = random.sample(range(2**31), 2)
    paths = notebooks(names)
    return dict(zip(paths, zip(grade_many(paths, seeds), grade_trusted(paths, seeds))))


@pytest.mark.parametrize("sample", SANDBOXED)
def test_reference_and_stub_in_sandboxed_workers_agree_with_in_process(sample, sandboxed):
    (reference, ref_local), (stub, stub_local) = (sandboxed[p] for p in notebooks([sample]))
    assert_reference_full_and_stub_zero(reference, stub)
    assert [verdicts(r) for r in reference + stub] == [verdicts(r) for r in ref_local + stub_local]

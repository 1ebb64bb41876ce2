"""Planted bugs: each copy of a reference solution in tests/grading_fixtures/ declares
(`# expect-fail:`) the checks it must fail, and must fail exactly those under three fresh seeds.

The fixtures are the course's own trusted code and what is tested is the checks' discrimination,
so they are graded in this process (`grading_support.grade_trusted`: the worker's own loading and
call handling and the same `run_checks`, without starting a sandboxed Python per file). A small,
explicit sample is also graded end to end in real sandboxed workers, where it must lose exactly
its checks too and agree check by check with the in-process verdicts under the same seeds; the
sandbox's own guarantees are tested with hostile submissions in test_grading_sandbox.py.
"""

from __future__ import annotations

import random

import pytest

from grading_support import (FIXTURES, assert_bug_loses_exactly_its_checks, assert_report_of_bug, grade_many,
                             grade_trusted,
                             selected, verdicts)

BUGS = sorted(FIXTURES.glob("*_bug_*.py"))
# plain Python data, tensors written in place (08_kv_append declares `mutates`), a torch module
SANDBOXED = [FIXTURES / f"{name}.py" for name in ("01_ngram_counts_bug_no_eos",
                                                   "08_kv_append_bug_clears_new",
                                                   "07_block_forward_bug_no_causal_mask")]


@pytest.fixture(scope="module")
def reports(request):
    bugs = selected(request, "bug")
    seeds = random.sample(range(2**31), 3)                            # three fresh seeds
    # a project's checks train models: one fresh seed here (the fairness tests and the
    # project's own test grade its bugs on the default seed, 1 and 2)
    projects = [b for b in bugs if b.stem.startswith("project_")]
    found = dict(zip(projects, grade_trusted(projects, seeds[:1])))
    others = [b for b in bugs if b not in found]
    return {**found, **dict(zip(others, grade_trusted(others, seeds)))}


@pytest.mark.parametrize("bug", BUGS, ids=lambda p: p.stem)
def test_planted_bug_loses_exactly_its_checks(bug, reports):
    if bug.stem.startswith("project_"):                               # one fresh seed (above)
        assert len(reports[bug]) == 1
        assert_report_of_bug(bug, reports[bug][0])
    else:
        assert_bug_loses_exactly_its_checks(bug, reports[bug])


@pytest.fixture(scope="module")
def sandboxed(request):
    bugs = selected(request, "sample")
    seeds = random.sample(range(2**31), 3)
    return dict(zip(bugs, zip(grade_many(bugs, seeds), grade_trusted(bugs, seeds))))


@pytest.mark.parametrize("sample", SANDBOXED, ids=lambda p: p.stem)
def test_planted_bug_in_a_sandboxed_worker_agrees_with_in_process(sample, sandboxed):
    in_worker, in_process = sandboxed[sample]
    assert_bug_loses_exactly_its_checks(sample, in_worker)
    assert [verdicts(r) for r in in_worker] == [verdicts(r) for r in in_process]

"""Planted bugs: each copy of a reference solution in tests/grading_fixtures/ declares
(`# expect-fail:`) the checks it must fail, and must fail exactly those under three fresh seeds.

The selected fixtures are graded once, four workers at a time, each fixture's three seeds in one worker
(`grading_support.grade_seeds`): starting a sandboxed worker costs far more than its checks.
"""

from __future__ import annotations

import random

import pytest

from grading_support import FIXTURES, assert_bug_loses_exactly_its_checks, grade_many, selected

BUGS = sorted(FIXTURES.glob("*_bug_*.py"))


@pytest.fixture(scope="module")
def reports(request):
    bugs = selected(request, "bug")
    seeds = random.sample(range(2**31), 3)                            # three fresh seeds
    return dict(zip(bugs, grade_many(bugs, seeds)))


@pytest.mark.parametrize("bug", BUGS, ids=lambda p: p.stem)
def test_planted_bug_loses_exactly_its_checks(bug, reports):
    assert_bug_loses_exactly_its_checks(bug, reports[bug])

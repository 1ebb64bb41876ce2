"""Exercises that are not copies of the book (issue #36, item 6), for 01_ngram_counts: the
book shows ``count_ngrams`` (and its teaching twin ``count_ngrams_simple``) in chapter 1, so the
exercise asks for the variant ``count_ngrams_and_contexts(sequences, n)``, which also returns
the counts of the (n-1)-token contexts, each counted once per token predicted after it.

A submission made of the book's visible teaching code, adapted only by renaming (and, since the
variant returns a pair, by pairing the book's counts with an empty Counter of contexts), must
score 0: the first check, ``returns_pair_of_counters``, already asks for contexts (keys of n-1
tokens), the variant's new part, and every other check requires it. No check that ignores the
contexts is reachable without them, so the set of checks such a copy may pass is empty.
"""

from __future__ import annotations

import pytest
from grading_support import grade_trusted
from test_grading_variants_v1 import book_code

from course_llm.grading import get_exercise

NAME = "01_ngram_counts"
COPIES = {
    "renamed": "count_ngrams_and_contexts = count_ngrams_simple\n",
    "paired_with_no_contexts": ("def count_ngrams_and_contexts(sequences, n):\n"
                                "    return count_ngrams_simple(sequences, n), Counter()\n"),
    "the_package_version_renamed": "count_ngrams_and_contexts = count_ngrams\n",
}


@pytest.mark.parametrize("how", sorted(COPIES))
def test_the_books_count_ngrams_renamed_scores_zero(how, tmp_path):
    path = tmp_path / f"{NAME}_book_copy.py"
    path.write_text(f"# course-llm exercise: {NAME}\n" + book_code("01_language_models")
                    + "from collections import Counter\n" + COPIES[how])
    for report in grade_trusted([path], [None, 1, 2])[0]:
        assert report.score == 0, report.table()
        first = report.results[0]
        assert first.name == "returns_pair_of_counters" and not first.passed, report.table()


def test_only_the_contexts_check_tests_the_new_part_alone():
    """The contexts check requires the three n-gram checks, and every later check requires it:
    a bug in the contexts is charged once, and a bug in the n-grams is not charged twice."""
    checks = {c.name: c for c in get_exercise(NAME).checks}
    assert set(checks["contexts_per_prediction"].requires) == {"starts_with_bos", "ends_with_eos"}
    for later in ("unigrams", "empty_and_short_sequences", "all_counts"):
        assert "contexts_per_prediction" in checks[later].requires

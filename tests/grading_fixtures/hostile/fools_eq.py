# Returns an object that claims to equal anything.
# course-llm exercise: 01_ngram_counts
# expect-message: cannot accept
from unittest.mock import ANY


def count_ngrams_and_contexts(sequences, n):
    return ANY

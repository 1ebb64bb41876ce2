# course-llm exercise: 01_ngram_counts
# expect-message: called sys.exit(3)
import sys


def count_ngrams_and_contexts(sequences, n):
    sys.exit(3)

# course-llm exercise: 01_ngram_counts
# expect-message: count_ngrams_and_contexts ended the process running it
import os


def count_ngrams_and_contexts(sequences, n):
    os._exit(0)

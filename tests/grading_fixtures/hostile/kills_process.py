# course-llm exercise: 01_ngram_counts
# expect-message: count_ngrams ended the process running it
import os


def count_ngrams(sequences, n):
    os._exit(0)

# course-llm exercise: 01_ngram_counts
# expect-message: did not finish loading
while True:
    pass


def count_ngrams_and_contexts(sequences, n):
    return {}

# course-llm exercise: 01_ngram_counts
# expect-message: did not return within
def count_ngrams_and_contexts(sequences, n):
    while True:
        pass

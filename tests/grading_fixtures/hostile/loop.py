# course-llm exercise: 01_ngram_counts
# expect-message: did not return within
def count_ngrams(sequences, n):
    while True:
        pass

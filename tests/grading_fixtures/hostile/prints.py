# course-llm exercise: 01_ngram_counts
# expect-message: printed more than
def count_ngrams_and_contexts(sequences, n):
    for i in range(10**9):
        print("debugging", i, sequences)

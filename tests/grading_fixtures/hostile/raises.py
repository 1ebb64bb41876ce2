# course-llm exercise: 01_ngram_counts
# expect-message: raised KeyError
def count_ngrams_and_contexts(sequences, n):
    return {}["missing"]

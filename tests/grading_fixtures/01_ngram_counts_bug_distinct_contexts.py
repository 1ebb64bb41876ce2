# Planted bug: the reference solution of 01_ngram_counts counting each context once per
# distinct n-gram it starts (the number of different next tokens), not once per occurrence.
# course-llm exercise: 01_ngram_counts
# expect-fail: contexts_per_prediction unigrams empty_and_short_sequences all_counts
# expect-hint: counts k times
from collections import Counter

from course_llm.ngram import BOS, EOS


def count_ngrams_and_contexts(sequences, n):
    ngrams = Counter()
    for sequence in sequences:
        padded = [BOS] * (n - 1) + list(sequence) + [EOS]
        for i in range(len(padded) - n + 1):
            ngrams[tuple(padded[i:i + n])] += 1
    contexts = Counter(gram[:-1] for gram in ngrams)  # BUG: should add each gram's count
    return ngrams, contexts

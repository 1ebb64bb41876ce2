# Planted bug: the reference solution of 01_ngram_counts padding with one <BOS> whatever n is.
# course-llm exercise: 01_ngram_counts
# expect-fail: starts_with_bos contexts_per_prediction unigrams empty_and_short_sequences all_counts
# expect-hint: n-1 <BOS> tokens
from collections import Counter

from course_llm.ngram import BOS, EOS


def count_ngrams_and_contexts(sequences, n):
    ngrams, contexts = Counter(), Counter()
    for sequence in sequences:
        padded = [BOS] + list(sequence) + [EOS]  # BUG: should be [BOS] * (n - 1)
        for i in range(len(padded) - n + 1):
            ngrams[tuple(padded[i:i + n])] += 1
            contexts[tuple(padded[i:i + n - 1])] += 1
    return ngrams, contexts

# Planted bug: the reference solution of 01_ngram_counts counting every (n-1)-window of the
# padded sequence as a context, including the last one, which ends with <EOS> and predicts nothing.
# course-llm exercise: 01_ngram_counts
# expect-fail: contexts_per_prediction unigrams empty_and_short_sequences all_counts
# expect-hint: predict nothing
from collections import Counter

from course_llm.ngram import BOS, EOS


def count_ngrams_and_contexts(sequences, n):
    ngrams, contexts = Counter(), Counter()
    for sequence in sequences:
        padded = [BOS] * (n - 1) + list(sequence) + [EOS]
        for i in range(len(padded) - n + 1):
            ngrams[tuple(padded[i:i + n])] += 1
        for i in range(len(padded) - n + 2):  # BUG: one window too many
            contexts[tuple(padded[i:i + n - 1])] += 1
    return ngrams, contexts

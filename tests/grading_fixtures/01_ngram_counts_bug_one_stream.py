# Planted bug: the reference solution of 01_ngram_counts padding the whole corpus as one stream,
# so n-grams span sequence boundaries and only the corpus gets <BOS>/<EOS>.
# course-llm exercise: 01_ngram_counts
# expect-fail: interior_ngrams starts_with_bos ends_with_eos contexts_per_prediction unigrams empty_and_short_sequences all_counts
# expect-hint: no n-gram may span two sequences
from collections import Counter

from course_llm.ngram import BOS, EOS


def count_ngrams_and_contexts(sequences, n):
    ngrams, contexts = Counter(), Counter()
    stream = [token for sequence in sequences for token in sequence]  # BUG: one stream
    padded = [BOS] * (n - 1) + stream + [EOS]
    for i in range(len(padded) - n + 1):
        ngrams[tuple(padded[i:i + n])] += 1
        contexts[tuple(padded[i:i + n - 1])] += 1
    return ngrams, contexts

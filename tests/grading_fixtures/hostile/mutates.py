# A count_ngrams_and_contexts with the right counts that pads its input lists in place.
# course-llm exercise: 01_ngram_counts
# expect-message: changed its input in place
from collections import Counter

BOS, EOS = "<BOS>", "<EOS>"


def count_ngrams_and_contexts(sequences, n):
    counts, contexts = Counter(), Counter()
    for sequence in sequences:
        sequence.append(EOS)
        padded = [BOS] * (n - 1) + sequence
        for i in range(len(padded) - n + 1):
            counts[tuple(padded[i:i + n])] += 1
            contexts[tuple(padded[i:i + n - 1])] += 1
    return counts, contexts

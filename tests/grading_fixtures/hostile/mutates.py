# A count_ngrams with the right counts that pads its input lists in place.
# course-llm exercise: 01_ngram_counts
# expect-message: changed its input in place
from collections import Counter

BOS, EOS = "<BOS>", "<EOS>"


def count_ngrams(sequences, n):
    counts = Counter()
    for sequence in sequences:
        sequence.append(EOS)
        padded = [BOS] * (n - 1) + sequence
        for i in range(len(padded) - n + 1):
            counts[tuple(padded[i:i + n])] += 1
    return counts

# A correct count_ngrams_and_contexts that reseeds torch's global generator on every call.
# course-llm exercise: 01_ngram_counts
# expect-message: called torch.manual_seed
from collections import Counter

import torch

BOS, EOS = "<BOS>", "<EOS>"


def count_ngrams_and_contexts(sequences, n):
    torch.manual_seed(0)
    counts, contexts = Counter(), Counter()
    for sequence in sequences:
        padded = [BOS] * (n - 1) + list(sequence) + [EOS]
        for i in range(len(padded) - n + 1):
            counts[tuple(padded[i:i + n])] += 1
            contexts[tuple(padded[i:i + n - 1])] += 1
    return counts, contexts

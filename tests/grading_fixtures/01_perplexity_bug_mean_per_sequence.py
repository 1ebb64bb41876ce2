# Planted bug: the reference solution of 01_perplexity averaging per-sequence perplexities
# instead of pooling log-probabilities and predictions over the corpus.
# course-llm exercise: 01_perplexity
# expect-fail: pools_all_sequences empty_sequence
# expect-hint: do not average per-sequence perplexities
import math


def perplexity(model, sequences):
    per_sequence = [math.exp(-model.log_prob(s) / (len(s) + 1)) for s in sequences]
    return sum(per_sequence) / len(per_sequence)  # BUG: mean of perplexities

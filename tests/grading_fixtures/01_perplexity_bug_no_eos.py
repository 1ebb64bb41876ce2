# Planted bug: the reference solution of 01_perplexity counting L predictions per sequence, not L + 1.
# course-llm exercise: 01_perplexity
# expect-fail: uniform_model single_sequence pools_all_sequences empty_sequence
# expect-hint: plus one for <EOS>
import math


def perplexity(model, sequences):
    total_log_prob = sum(model.log_prob(s) for s in sequences)
    n_predictions = sum(len(s) for s in sequences)  # BUG: the <EOS> prediction is not counted
    return math.exp(-total_log_prob / n_predictions)

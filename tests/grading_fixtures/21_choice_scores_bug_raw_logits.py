# Planted bug: the reference solution of 21_choice_scores that sums raw logits instead of log-probabilities.
# course-llm exercise: 21_choice_scores
# expect-fail: log_probabilities shifted_by_one prompt_excluded
# expect-hint: logits are not log-probabilities
import torch


def continuation_logprob(logits, ids, n_prompt):
    rows = torch.arange(n_prompt - 1, len(ids) - 1)
    return logits.double()[rows, ids[n_prompt:]].sum().item()              # BUG: no log_softmax


def pick_choice(scores, lengths, normalize):
    values = [s / n for s, n in zip(scores, lengths)] if normalize else list(scores)
    return max(range(len(values)), key=values.__getitem__)

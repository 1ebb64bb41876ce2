# Planted bug: the reference solution of 21_choice_scores that never divides by the length.
# course-llm exercise: 21_choice_scores
# expect-fail: normalized_choice
# expect-hint: not the raw score
import torch


def continuation_logprob(logits, ids, n_prompt):
    logp = torch.log_softmax(logits.double(), dim=-1)
    rows = torch.arange(n_prompt - 1, len(ids) - 1)
    return logp[rows, ids[n_prompt:]].sum().item()


def pick_choice(scores, lengths, normalize):
    values = list(scores)                                                  # BUG: normalize ignored
    return max(range(len(values)), key=values.__getitem__)

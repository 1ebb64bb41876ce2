# Planted bug: the reference solution of 21_choice_scores that picks the lowest score, as for a loss.
# course-llm exercise: 21_choice_scores
# expect-fail: summed_choice normalized_choice
# expect-hint: not the argmin
import torch


def continuation_logprob(logits, ids, n_prompt):
    logp = torch.log_softmax(logits.double(), dim=-1)
    rows = torch.arange(n_prompt - 1, len(ids) - 1)
    return logp[rows, ids[n_prompt:]].sum().item()


def pick_choice(scores, lengths, normalize):
    values = [s / n for s, n in zip(scores, lengths)] if normalize else list(scores)
    return min(range(len(values)), key=values.__getitem__)                # BUG: argmin

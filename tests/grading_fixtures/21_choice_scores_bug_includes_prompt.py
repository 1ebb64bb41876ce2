# Planted bug: the reference solution of 21_choice_scores that scores the prompt's tokens too.
# course-llm exercise: 21_choice_scores
# expect-fail: prompt_excluded
# expect-hint: not the prompt's
import torch


def continuation_logprob(logits, ids, n_prompt):
    logp = torch.log_softmax(logits.double(), dim=-1)
    rows = torch.arange(0, len(ids) - 1)                                   # BUG: every token after the first
    return logp[rows, ids[1:]].sum().item()


def pick_choice(scores, lengths, normalize):
    values = [s / n for s, n in zip(scores, lengths)] if normalize else list(scores)
    return max(range(len(values)), key=values.__getitem__)

# Planted bug: the reference solution of 21_choice_scores that reads token t's score from row t.
# course-llm exercise: 21_choice_scores
# expect-fail: shifted_by_one prompt_excluded
# expect-hint: predicts the NEXT token
import torch


def continuation_logprob(logits, ids, n_prompt):
    logp = torch.log_softmax(logits.double(), dim=-1)
    rows = torch.arange(n_prompt, len(ids))                                # BUG: should be n_prompt - 1 .. T - 2
    return logp[rows, ids[n_prompt:]].sum().item()


def pick_choice(scores, lengths, normalize):
    values = [s / n for s, n in zip(scores, lengths)] if normalize else list(scores)
    return max(range(len(values)), key=values.__getitem__)

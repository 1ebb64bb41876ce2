# Planted bug: each beam contributes only its own best token, so the k survivors always come from
# k different beams (wrong whenever one beam's second-best extension beats another beam's best).
# course-llm exercise: 08_beam_step
# expect-fail: best_candidates scores_consistent one_beam_dominates first_step
# expect-hint: you took the best token of each beam
import torch


def beam_step(logp, scores):
    best, token = logp.max(dim=-1)                                    # BUG: one candidate per beam
    total = scores + best
    score, parent = torch.sort(total, descending=True)
    return parent, token[parent], score

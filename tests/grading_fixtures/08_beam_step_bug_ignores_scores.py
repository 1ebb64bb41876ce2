# Planted bug: ranks the candidates by the next token's log-probability alone, forgetting the
# beams' scores so far (greedy on the last step, not on the whole sequence).
# course-llm exercise: 08_beam_step
# expect-fail: best_candidates scores_consistent one_beam_dominates first_step
# expect-hint: by logp alone
import torch


def beam_step(logp, scores):
    k, V = logp.shape
    score, flat = torch.topk(logp.reshape(-1), k)                    # BUG: scores not added
    return flat // V, flat % V, score

# Planted bug: the reference solution of 07_causal_lm_loss dividing by every target, ignored ones included.
# course-llm exercise: 07_causal_lm_loss
# expect-fail: ignored_targets ignore_index_is_a_token_id all_but_one_ignored hf_padded_batch gradient
# expect-hint: you divided by all B*(T-1) targets
import torch


def causal_lm_loss(logits, tokens, ignore_index=-100):
    scores = logits[:, :-1].float()
    targets = tokens[:, 1:]
    keep = targets != ignore_index
    logp = torch.log_softmax(scores, dim=-1)
    picked = logp.gather(-1, targets.clamp(0, logits.shape[-1] - 1).unsqueeze(-1)).squeeze(-1)
    return -(picked * keep).sum() / targets.numel()                 # BUG: B*(T-1), not the kept count

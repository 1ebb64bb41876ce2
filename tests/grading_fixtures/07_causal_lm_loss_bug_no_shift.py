# Planted bug: the reference solution of 07_causal_lm_loss pairing position t's logits with token t (no shift).
# course-llm exercise: 07_causal_lm_loss
# expect-fail: values shift ignored_targets ignore_index_is_a_token_id all_but_one_ignored hf_padded_batch gradient
# expect-hint: position t's logits score token t+1
import torch


def causal_lm_loss(logits, tokens, ignore_index=-100):
    scores = logits.float()                                          # BUG: no shift, every position
    targets = tokens
    keep = targets != ignore_index
    logp = torch.log_softmax(scores, dim=-1)
    picked = logp.gather(-1, targets.clamp(0, logits.shape[-1] - 1).unsqueeze(-1)).squeeze(-1)
    return -(picked * keep).sum() / keep.sum()

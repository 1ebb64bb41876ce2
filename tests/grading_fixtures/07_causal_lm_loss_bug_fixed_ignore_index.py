# Planted bug: the reference solution of 07_causal_lm_loss ignoring -100 whatever ignore_index says.
# course-llm exercise: 07_causal_lm_loss
# expect-fail: ignore_index_is_a_token_id
# expect-hint: use the `ignore_index` argument
import torch


def causal_lm_loss(logits, tokens, ignore_index=-100):
    scores = logits[:, :-1].float()
    targets = tokens[:, 1:]
    keep = targets != -100                                           # BUG: hard-coded -100
    logp = torch.log_softmax(scores, dim=-1)
    picked = logp.gather(-1, targets.clamp(0, logits.shape[-1] - 1).unsqueeze(-1)).squeeze(-1)
    return -(picked * keep).sum() / keep.sum()

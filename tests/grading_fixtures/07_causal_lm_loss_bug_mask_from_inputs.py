# Planted bug: the reference solution of 07_causal_lm_loss taking the ignore mask from tokens[:, :-1] (the inputs).
# course-llm exercise: 07_causal_lm_loss
# expect-fail: ignored_targets ignore_index_is_a_token_id all_but_one_ignored hf_padded_batch gradient
# expect-hint: you took the mask from the inputs
import torch


def causal_lm_loss(logits, tokens, ignore_index=-100):
    scores = logits[:, :-1].float()
    targets = tokens[:, 1:]
    keep = tokens[:, :-1] != ignore_index                            # BUG: the mask of the inputs, not the targets
    logp = torch.log_softmax(scores, dim=-1)
    picked = logp.gather(-1, targets.clamp(0, logits.shape[-1] - 1).unsqueeze(-1)).squeeze(-1)
    return -(picked * keep).sum() / keep.sum()

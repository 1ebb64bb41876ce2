# Planted bug: the reference solution of 07_causal_lm_loss returning a Python float (.item()): right value, no gradient.
# course-llm exercise: 07_causal_lm_loss
# expect-fail: gradient
# expect-hint: 0-dimensional tensor
import torch


def causal_lm_loss(logits, tokens, ignore_index=-100):
    scores = logits[:, :-1].float()
    targets = tokens[:, 1:]
    keep = targets != ignore_index
    logp = torch.log_softmax(scores, dim=-1)
    picked = logp.gather(-1, targets.clamp(0, logits.shape[-1] - 1).unsqueeze(-1)).squeeze(-1)
    return (-(picked * keep).sum() / keep.sum()).item()             # BUG: a float cannot be backpropagated

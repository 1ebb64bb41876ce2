# Planted bug: the reference solution of 08_top_p that writes -inf into the caller's logits
# (masked_fill_); the framework reports the changed input on every call that removes a token
# (p = 1 removes none).
# course-llm exercise: 08_top_p
# expect-fail: values top_token_kept rows_independent ties input_unchanged
# expect-hint: in place
import torch


def top_p_filter(logits, p):
    probs, order = logits.softmax(dim=-1).sort(dim=-1)
    remove_sorted = probs.cumsum(dim=-1) <= 1 - p
    remove_sorted[..., -1] = False
    remove = remove_sorted.scatter(-1, order, remove_sorted)
    return logits.masked_fill_(remove, float("-inf"))                       # BUG: in place

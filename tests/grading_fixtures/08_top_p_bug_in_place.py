# Planted bug: the reference solution of 08_top_p that writes -inf into the caller's logits
# (masked_fill_); the framework reports the changed input on the first call that removes a token, and
# the checks that require `values` are skipped.
# course-llm exercise: 08_top_p
# expect-fail: values min_keep_floor p_one_keeps_all rows_independent ties input_unchanged
# expect-hint: in place
import torch


def top_p_min_keep(logits, p, min_keep=1):
    probs, order = logits.softmax(dim=-1).sort(dim=-1)
    remove_sorted = probs.cumsum(dim=-1) <= 1 - p
    remove_sorted[..., logits.size(-1) - min_keep:] = False
    remove = remove_sorted.scatter(-1, order, remove_sorted)
    return logits.masked_fill_(remove, float("-inf"))                       # BUG: in place

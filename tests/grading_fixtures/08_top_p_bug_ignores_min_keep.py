# Planted bug: the reference solution of 08_top_p that ignores min_keep: the book's top_p_filter,
# renamed (rows whose nucleus is smaller than min_keep keep too few tokens).
# course-llm exercise: 08_top_p
# expect-fail: values min_keep_floor p_one_keeps_all rows_independent ties input_unchanged
# expect-hint: you kept the nucleus alone
import torch


def top_p_min_keep(logits, p, min_keep=1):
    probs, order = logits.softmax(dim=-1).sort(dim=-1)
    remove_sorted = probs.cumsum(dim=-1) <= 1 - p
    remove_sorted[..., -1] = False                                          # BUG: only the top token is kept for sure
    remove = remove_sorted.scatter(-1, order, remove_sorted)
    return logits.masked_fill(remove, float("-inf"))

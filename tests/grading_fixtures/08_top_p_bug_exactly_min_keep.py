# Planted bug: the reference solution of 08_top_p that keeps exactly the min_keep most likely tokens
# (top-k with k = min_keep), also where the nucleus is larger.
# course-llm exercise: 08_top_p
# expect-fail: values min_keep_floor p_one_keeps_all rows_independent ties input_unchanged
# expect-hint: you kept exactly min_keep tokens
import torch


def top_p_min_keep(logits, p, min_keep=1):
    kth = logits.topk(min_keep, dim=-1).values[..., -1:]                     # BUG: the nucleus is never used
    return logits.masked_fill(logits < kth, float("-inf"))

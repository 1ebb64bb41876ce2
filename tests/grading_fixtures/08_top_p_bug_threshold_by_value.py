# Planted bug: the reference solution of 08_top_p that keeps every logit at least as large as the
# last one kept, so all tokens tied with it are kept and the kept set grows on ties.
# course-llm exercise: 08_top_p
# expect-fail: ties
# expect-hint: every token tied with the last one kept
import torch


def top_p_min_keep(logits, p, min_keep=1):
    probs, order = logits.softmax(dim=-1).sort(dim=-1)                      # ascending
    remove_sorted = probs.cumsum(dim=-1) <= 1 - p
    remove_sorted[..., logits.size(-1) - min_keep:] = False
    first_kept = remove_sorted.sum(dim=-1, keepdim=True)                     # sorted index of the last one kept
    last = logits.gather(-1, order.gather(-1, first_kept))
    return logits.masked_fill(logits < last, float("-inf"))                  # BUG: keeps all ties of it

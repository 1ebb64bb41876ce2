# Planted bug: the reference solution of 08_top_p that keeps every logit at least as large as the
# last one in the nucleus, so all tokens tied with it are kept and the nucleus grows on ties.
# course-llm exercise: 08_top_p
# expect-fail: ties
# expect-hint: every token tied with the last one of the nucleus
import torch


def top_p_filter(logits, p):
    probs, order = logits.softmax(dim=-1).sort(dim=-1)                      # ascending
    remove_sorted = probs.cumsum(dim=-1) <= 1 - p
    remove_sorted[..., -1] = False
    first_kept = remove_sorted.sum(dim=-1, keepdim=True)                     # sorted index of the nucleus' last token
    last = logits.gather(-1, order.gather(-1, first_kept))
    return logits.masked_fill(logits < last, float("-inf"))                  # BUG: keeps all ties of it

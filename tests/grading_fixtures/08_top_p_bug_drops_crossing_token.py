# Planted bug: the reference solution of 08_top_p that removes the token whose probability makes the
# cumulative sum cross p (the nucleus then holds less than p whenever it has two or more tokens).
# course-llm exercise: 08_top_p
# expect-fail: values rows_independent ties
# expect-hint: the cumulative sum cross p: keep it
import torch


def top_p_filter(logits, p):
    probs, order = logits.softmax(dim=-1).sort(dim=-1)                      # ascending
    mass_below = probs.cumsum(dim=-1) - probs                               # mass of the worse tokens
    remove_sorted = mass_below < 1 - p                                      # BUG: should be cumsum <= 1 - p
    remove_sorted[..., -1] = False                                          # the top token stays
    remove = remove_sorted.scatter(-1, order, remove_sorted)
    return logits.masked_fill(remove, float("-inf"))

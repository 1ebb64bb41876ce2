# Planted bug: the reference solution of 08_top_p that removes the token whose probability makes the
# cumulative sum cross p (the nucleus then holds less than p whenever it has two or more tokens).
# course-llm exercise: 08_top_p
# expect-fail: values min_keep_floor p_one_keeps_all rows_independent ties input_unchanged
# expect-hint: the cumulative sum cross p: keep it
import torch


def top_p_min_keep(logits, p, min_keep=1):
    probs, order = logits.softmax(dim=-1).sort(dim=-1)                      # ascending
    mass_below = probs.cumsum(dim=-1) - probs                               # mass of the worse tokens
    remove_sorted = mass_below < 1 - p                                      # BUG: should be cumsum <= 1 - p
    remove_sorted[..., logits.size(-1) - min_keep:] = False                 # the min_keep best stay
    remove = remove_sorted.scatter(-1, order, remove_sorted)
    return logits.masked_fill(remove, float("-inf"))

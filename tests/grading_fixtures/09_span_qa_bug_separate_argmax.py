# Planted bug: start and end chosen by two separate argmaxes (the span can end before it starts).
# course-llm exercise: 09_span_qa
# expect-fail: start_before_end longest_span allowed_positions batch_of_examples
# expect-hint: not argmax(s) and argmax(e) separately
import torch


def best_span(start_logits, end_logits, max_len, allowed=None):
    s, e = torch.as_tensor(start_logits), torch.as_tensor(end_logits)
    if allowed is not None:
        s = s.masked_fill(~allowed, float("-inf"))
        e = e.masked_fill(~allowed, float("-inf"))
    return s.argmax(-1), e.argmax(-1)  # BUG: no i <= j, no max_len

# Planted bug: the reference solution of 09_span_qa that ignores the `allowed` mask.
# course-llm exercise: 09_span_qa
# expect-fail: allowed_positions batch_of_examples
# expect-hint: ignored
import torch


def best_span(start_logits, end_logits, max_len, allowed=None):
    s, e = torch.as_tensor(start_logits), torch.as_tensor(end_logits)
    single = s.dim() == 1
    if single:
        s, e = s[None], e[None]
    T = s.shape[1]
    i = torch.arange(T)
    ok = (i[None, :] >= i[:, None]) & (i[None, :] - i[:, None] < max_len)
    ok = ok.expand(s.shape[0], T, T)  # BUG: `allowed` never used
    flat = (s[:, :, None] + e[:, None, :]).masked_fill(~ok, float("-inf")).flatten(1).argmax(1)
    start, end = flat // T, flat % T
    return (start[0], end[0]) if single else (start, end)

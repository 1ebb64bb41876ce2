# Planted bug: the reference solution of 09_span_qa allowing spans of max_len + 1 tokens (j - i <= max_len).
# course-llm exercise: 09_span_qa
# expect-fail: longest_span batch_of_examples
# expect-hint: j - i + 1 tokens
import torch


def best_span(start_logits, end_logits, max_len, allowed=None):
    s, e = torch.as_tensor(start_logits), torch.as_tensor(end_logits)
    single = s.dim() == 1
    if single:
        s, e = s[None], e[None]
    T = s.shape[1]
    i = torch.arange(T)
    ok = (i[None, :] >= i[:, None]) & (i[None, :] - i[:, None] <= max_len)  # BUG: one token too long
    ok = ok.expand(s.shape[0], T, T)
    if allowed is not None:
        a = torch.as_tensor(allowed)
        a = a[None] if single else a
        ok = ok & a[:, :, None] & a[:, None, :]
    flat = (s[:, :, None] + e[:, None, :]).masked_fill(~ok, float("-inf")).flatten(1).argmax(1)
    start, end = flat // T, flat % T
    return (start[0], end[0]) if single else (start, end)

# Planted bug: the reference solution of 17_accept_reject with the ratio upside down.
# course-llm exercise: 17_accept_reject
# expect-fail: accept_rule accepts_when_target_likes_it_more
# expect-hint: not q[x] / p[x]
import torch


def accept(p, q, x, u):
    return bool(u < (q[x] / p[x]).item())                  # BUG: q / p


def residual(p, q):
    r = (p - q).clamp(min=0)
    return r / r.sum()

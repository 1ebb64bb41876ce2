# Planted bug: the reference solution of 17_accept_reject that keeps every drafted token.
# course-llm exercise: 17_accept_reject
# expect-fail: accept_rule accepts_when_target_likes_it_more
# expect-hint: must be rejected when u >= p[x] / q[x]
import torch


def accept(p, q, x, u):
    return True                                            # BUG: greedy-style acceptance


def residual(p, q):
    r = (p - q).clamp(min=0)
    return r / r.sum()

# Planted bug: the reference solution of 17_accept_reject with |p - q| as the residual.
# course-llm exercise: 17_accept_reject
# expect-fail: residual_distribution
# expect-hint: not |p - q|
import torch


def accept(p, q, x, u):
    return bool(u < (p[x] / q[x]).item())


def residual(p, q):
    r = (p - q).abs()                                      # BUG: |p - q| instead of max(0, p - q)
    return r / r.sum()

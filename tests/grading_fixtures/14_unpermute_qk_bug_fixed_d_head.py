# Planted bug: the reference solution of 14_unpermute_qk that assumes d_head = 64 (SmolLM2's) and
# derives the number of heads from it instead of using n_head (right for one head narrower
# than 64 and for SmolLM2 shapes).
# course-llm exercise: 14_unpermute_qk
# expect-fail: several_heads
# expect-hint: did not use n_head
import torch


def unpermute_qk(w, n_head):
    rows = w.shape[0]
    n_head = max(rows // 64, 1)
    d_head = rows // n_head
    return w.reshape(n_head, d_head // 2, 2, -1).transpose(1, 2).reshape(rows, -1)

# Planted bug: the reference solution of 14_unpermute_qk that ignores n_head and un-permutes the
# whole matrix as if it were one head (right only when n_head = 1).
# course-llm exercise: 14_unpermute_qk
# expect-fail: several_heads smollm2_shapes
# expect-hint: did not use n_head
import torch


def unpermute_qk(w, n_head):
    rows = w.shape[0]
    return w.reshape(rows // 2, 2, -1).transpose(0, 1).reshape(rows, -1)

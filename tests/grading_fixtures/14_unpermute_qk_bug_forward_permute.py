# Planted bug: the reference solution of 14_unpermute_qk that applies llama.cpp's permutation
# (reshape to (n_head, 2, d_head/2, d_in)) instead of its inverse; the two differ once d_head >= 6.
# course-llm exercise: 14_unpermute_qk
# expect-fail: several_heads one_head smollm2_shapes
# expect-hint: forward permutation
import torch


def unpermute_qk(w, n_head):
    rows = w.shape[0]
    d_head = rows // n_head
    return w.reshape(n_head, 2, d_head // 2, -1).transpose(1, 2).reshape(rows, -1)

# Planted bug: no capacity check, so an overflowing append dies on a shape mismatch (RuntimeError)
# instead of raising a ValueError that says what is wrong.
# course-llm exercise: 08_kv_append
# expect-fail: overflow_raises
# expect-hint: raise ValueError
import torch


def kv_append(k_cache, v_cache, length, k_new, v_new):
    end = length + k_new.size(2)                                      # BUG: not checked against L_max
    k_cache[:, :, length:end] = k_new
    v_cache[:, :, length:end] = v_new
    return k_cache[:, :, :end], v_cache[:, :, :end]

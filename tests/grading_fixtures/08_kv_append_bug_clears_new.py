# Planted bug: writes the cache correctly, then zeroes k_new and v_new "to free them": writing into
# an argument the exercise does not declare as mutated still fails every call that returns.
# course-llm exercise: 08_kv_append
# expect-fail: returns_prefix writes_in_place decoding_loop
# expect-hint: in place
import torch


def kv_append(k_cache, v_cache, length, k_new, v_new):
    end = length + k_new.size(2)
    if end > k_cache.size(2):
        raise ValueError("KV cache overflow")
    k_cache[:, :, length:end] = k_new
    v_cache[:, :, length:end] = v_new
    k_new.zero_()                                                     # BUG: writes into an input
    v_new.zero_()
    return k_cache[:, :, :end], v_cache[:, :, :end]

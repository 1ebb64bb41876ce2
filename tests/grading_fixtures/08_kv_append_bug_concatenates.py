# Planted bug: builds a new tensor with torch.cat instead of writing into the preallocated cache;
# the returned prefix is right on one call, but the cache never fills, so a decoding loop breaks.
# course-llm exercise: 08_kv_append
# expect-fail: writes_in_place decoding_loop
# expect-hint: do not build a new tensor with torch.cat
import torch


def kv_append(k_cache, v_cache, length, k_new, v_new):
    end = length + k_new.size(2)
    if end > k_cache.size(2):
        raise ValueError("KV cache overflow")
    k = torch.cat([k_cache[:, :, :length], k_new], dim=2)            # BUG: a copy, cache untouched
    v = torch.cat([v_cache[:, :, :length], v_new], dim=2)
    return k, v

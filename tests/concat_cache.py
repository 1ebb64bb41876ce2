"""A test double for the attention KV-cache protocol, shared by the attention, layers and GPT tests."""
import torch


class ConcatCache:
    """The smallest object satisfying `MultiHeadAttention`'s cache protocol (``length``,
    ``update(k, v) -> (k_all, v_all)``): it concatenates along time instead of preallocating,
    so it is an independent check of `course_llm.generate.KVCache` and of the position offsets."""

    def __init__(self):
        self.k = self.v = None

    @property
    def length(self):
        return 0 if self.k is None else self.k.size(2)

    def update(self, k, v):
        self.k = k if self.k is None else torch.cat([self.k, k], 2)
        self.v = v if self.v is None else torch.cat([self.v, v], 2)
        return self.k, self.v

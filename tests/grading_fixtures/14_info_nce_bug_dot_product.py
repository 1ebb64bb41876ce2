# Planted bug: the reference solution of 14_info_nce with raw dot products instead of cosine similarities.
# course-llm exercise: 14_info_nce
# expect-fail: values scale_invariant
# expect-hint: COSINE similarity
import torch
import torch.nn.functional as F


def info_nce(z1, z2, temperature=0.5):
    N = z1.shape[0]
    z = torch.cat([z1, z2])  # BUG: not normalised
    logits = (z @ z.T / temperature).masked_fill(torch.eye(2 * N, dtype=torch.bool), float("-inf"))
    partner = torch.cat([torch.arange(N, 2 * N), torch.arange(N)])
    return F.cross_entropy(logits, partner)

# Planted bug: the reference solution of 14_info_nce without the self-similarity mask (k = i stays in the denominator).
# course-llm exercise: 14_info_nce
# expect-fail: values excludes_self
# expect-hint: 2N - 1 OTHER vectors
import torch
import torch.nn.functional as F


def info_nce(z1, z2, temperature=0.5):
    N = z1.shape[0]
    z = F.normalize(torch.cat([z1, z2]), dim=1)
    logits = z @ z.T / temperature  # BUG: the diagonal is not masked out
    partner = torch.cat([torch.arange(N, 2 * N), torch.arange(N)])
    return F.cross_entropy(logits, partner)

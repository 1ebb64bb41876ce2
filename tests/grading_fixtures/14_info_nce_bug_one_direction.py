# Planted bug: the reference solution of 14_info_nce that only uses the N rows of z1 as anchors.
# course-llm exercise: 14_info_nce
# expect-fail: values symmetric_in_the_views
# expect-hint: anchors are all 2N vectors
import torch
import torch.nn.functional as F


def info_nce(z1, z2, temperature=0.5):
    N = z1.shape[0]
    z = F.normalize(torch.cat([z1, z2]), dim=1)
    logits = (z @ z.T / temperature).masked_fill(torch.eye(2 * N, dtype=torch.bool), float("-inf"))
    partner = torch.cat([torch.arange(N, 2 * N), torch.arange(N)])
    return F.cross_entropy(logits[:N], partner[:N])  # BUG: anchors from z1 only

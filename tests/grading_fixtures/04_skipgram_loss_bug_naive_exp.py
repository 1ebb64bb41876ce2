# Planted bug: the reference solution of 04_skipgram_loss with a naive softmax that overflows.
# course-llm exercise: 04_skipgram_loss
# expect-fail: large_scores
# expect-hint: subtract the row maximum
import torch


def skipgram_loss(V, U, centre, context):
    scores = V[centre] @ U.T
    probs = torch.exp(scores) / torch.exp(scores).sum(dim=1, keepdim=True)  # BUG: overflows for large scores
    return -torch.log(probs[torch.arange(len(centre)), context]).mean()

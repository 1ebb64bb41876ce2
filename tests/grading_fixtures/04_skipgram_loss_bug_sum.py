# Planted bug: the reference solution of 04_skipgram_loss summing instead of averaging over the batch.
# course-llm exercise: 04_skipgram_loss
# expect-fail: batch_mean large_scores
# expect-hint: the mean, not the sum
import torch


def skipgram_loss(V, U, centre, context):
    scores = V[centre] @ U.T
    return (torch.logsumexp(scores, dim=1) - scores[torch.arange(len(centre)), context]).sum()  # BUG: mean

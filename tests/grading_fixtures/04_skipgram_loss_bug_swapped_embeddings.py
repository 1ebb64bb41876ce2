# Planted bug: the reference solution of 04_skipgram_loss that reads the centre word from U and the
# context words from V (the two tables swapped).
# course-llm exercise: 04_skipgram_loss
# expect-fail: one_pair batch_mean large_scores
# expect-hint: the centre word uses V
import torch


def skipgram_loss(V, U, centre, context):
    scores = U[centre] @ V.T  # BUG: the centre word uses V, the context words use U
    return (torch.logsumexp(scores, dim=1) - scores[torch.arange(len(centre)), context]).mean()

# Planted bug: the reference solution of 13_bradley_terry summed over the batch instead of averaged.
# course-llm exercise: 13_bradley_terry
# expect-fail: values batch_mean large_margins
# expect-hint: you summed over the batch
import torch.nn.functional as F


def bradley_terry_loss(r_chosen, r_rejected):
    return -F.logsigmoid(r_chosen - r_rejected).sum()

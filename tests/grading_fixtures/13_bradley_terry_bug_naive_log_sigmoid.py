# Planted bug: the reference solution of 13_bradley_terry computed as log(sigmoid(z)), which underflows to
# log(0) = -inf (loss inf) when the rejected response has a reward far above the chosen one.
# course-llm exercise: 13_bradley_terry
# expect-fail: large_margins
# expect-hint: underflows
import torch


def bradley_terry_loss(r_chosen, r_rejected):
    return -torch.log(torch.sigmoid(r_chosen - r_rejected)).mean()

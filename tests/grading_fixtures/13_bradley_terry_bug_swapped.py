# Planted bug: the reference solution of 13_bradley_terry with the chosen and rejected rewards swapped.
# course-llm exercise: 13_bradley_terry
# expect-fail: values batch_mean large_margins
# expect-hint: you swapped the arguments
import torch.nn.functional as F


def bradley_terry_loss(r_chosen, r_rejected):
    return -F.logsigmoid(r_rejected - r_chosen).mean()

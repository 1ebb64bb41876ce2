# Planted bug: the reference solution of 13_dpo_loss computing log(sigmoid(z)), which underflows to
# log(0) = -inf once a pair's margin is very negative.
# course-llm exercise: 13_dpo_loss
# expect-fail: large_margins
# expect-hint: F.logsigmoid
import torch


def dpo_loss(policy_chosen_logps, policy_rejected_logps, ref_chosen_logps, ref_rejected_logps, beta=0.1):
    chosen = policy_chosen_logps - ref_chosen_logps
    rejected = policy_rejected_logps - ref_rejected_logps
    return -torch.log(torch.sigmoid(beta * (chosen - rejected))).mean()  # BUG: use F.logsigmoid

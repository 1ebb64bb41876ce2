# Planted bug: the reference solution of 13_dpo_loss with beta multiplying the loss instead of the margin.
# course-llm exercise: 13_dpo_loss
# (large_margins uses beta = 1, where the two placements agree.)
# expect-fail: values policy_equals_reference beta_inside large_margins
# expect-hint: beta multiplies the loss
import torch.nn.functional as F


def dpo_loss(policy_chosen_logps, policy_rejected_logps, ref_chosen_logps, ref_rejected_logps, beta=0.1):
    chosen = policy_chosen_logps - ref_chosen_logps
    rejected = policy_rejected_logps - ref_rejected_logps
    return -beta * F.logsigmoid(chosen - rejected).mean()

# Planted bug: the reference solution of 13_dpo_loss that forgets the reference model (a Bradley-Terry loss on
# beta log pi alone).
# course-llm exercise: 13_dpo_loss
# expect-fail: values policy_equals_reference beta_inside large_margins
# expect-hint: left out the reference model
import torch.nn.functional as F


def dpo_loss(policy_chosen_logps, policy_rejected_logps, ref_chosen_logps, ref_rejected_logps, beta=0.1):
    return -F.logsigmoid(beta * (policy_chosen_logps - policy_rejected_logps)).mean()

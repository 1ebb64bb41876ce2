# Planted bug: the reference solution of 07_cosine_schedule with the warm-up ramp max_lr * step / warmup_steps, starting at 0 and one step late.
# course-llm exercise: 07_cosine_schedule
# expect-fail: warmup_ramp peak_at_end_of_warmup no_warmup matches_torch_schedulers
# expect-hint: step 0 is already above 0
import math


def cosine_schedule(step, max_steps, warmup_steps, hold_steps, max_lr, min_lr):
    if step < warmup_steps:
        return max_lr * step / warmup_steps  # BUG: (step + 1) / warmup_steps
    decay_start = warmup_steps + hold_steps
    if step < decay_start:
        return max_lr
    if step > max_steps:
        return min_lr
    progress = (step - decay_start) / (max_steps - decay_start)
    return min_lr + (max_lr - min_lr) * 0.5 * (1.0 + math.cos(math.pi * progress))

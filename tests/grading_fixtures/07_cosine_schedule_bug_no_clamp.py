# Planted bug: the reference solution of 07_cosine_schedule without the floor after max_steps, so the cosine climbs back up.
# course-llm exercise: 07_cosine_schedule
# expect-fail: stays_at_min_lr
# expect-hint: stays at min_lr
import math


def cosine_schedule(step, max_steps, warmup_steps, hold_steps, max_lr, min_lr):
    if step < warmup_steps:
        return max_lr * (step + 1) / warmup_steps
    decay_start = warmup_steps + hold_steps
    if step < decay_start:
        return max_lr
    # BUG: no "if step > max_steps: return min_lr"
    progress = (step - decay_start) / (max_steps - decay_start)
    return min_lr + (max_lr - min_lr) * 0.5 * (1.0 + math.cos(math.pi * progress))

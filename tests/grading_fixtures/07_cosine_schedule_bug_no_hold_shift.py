# Planted bug: the reference solution of 07_cosine_schedule holding at max_lr but running the cosine from warmup_steps, as if there were no hold (it jumps down when the hold ends).
# course-llm exercise: 07_cosine_schedule
# expect-fail: cosine_decay reaches_min_lr no_warmup matches_torch_schedulers
# expect-hint: your cosine starts at warmup_steps
import math


def cosine_schedule(step, max_steps, warmup_steps, hold_steps, max_lr, min_lr):
    if step < warmup_steps:
        return max_lr * (step + 1) / warmup_steps
    if step < warmup_steps + hold_steps:
        return max_lr
    if step > max_steps:
        return min_lr
    progress = (step - warmup_steps) / (max_steps - warmup_steps)  # BUG: from the hold's end
    return min_lr + (max_lr - min_lr) * 0.5 * (1.0 + math.cos(math.pi * progress))

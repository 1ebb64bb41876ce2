# Planted bug: the reference solution of 10_span_corruption returning empty targets when nothing is noised,
# instead of T5's lone final sentinel.
# course-llm exercise: 10_span_corruption
# expect-fail: no_noise
# expect-hint: final sentinel alone


def span_corruption(tokens, noise_mask):
    if not any(noise_mask):                            # BUG: T5 still writes the final sentinel
        return list(tokens), []
    inputs, targets, k = [], [], 0
    previous = False
    for token, noise in zip(tokens, noise_mask):
        if noise and not previous:
            inputs.append(f"<extra_id_{k}>")
            targets.append(f"<extra_id_{k}>")
            k += 1
        (targets if noise else inputs).append(token)
        previous = noise
    targets.append(f"<extra_id_{k}>")
    return inputs, targets

# Planted bug: the reference solution of 10_span_corruption giving every noised token its own sentinel, so
# adjacent noised tokens do not merge into one span.
# course-llm exercise: 10_span_corruption
# expect-fail: random_masks adjacent_merge
# expect-hint: opens a new span


def span_corruption(tokens, noise_mask):
    inputs, targets, k = [], [], 0
    for token, noise in zip(tokens, noise_mask):
        if noise:                                      # BUG: a new sentinel for each noised token
            inputs.append(f"<extra_id_{k}>")
            targets += [f"<extra_id_{k}>", token]
            k += 1
        else:
            inputs.append(token)
    targets.append(f"<extra_id_{k}>")
    return inputs, targets

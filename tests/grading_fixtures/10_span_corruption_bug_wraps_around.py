# Planted bug: the reference solution of 10_span_corruption that looks at noise_mask[i - 1] for the first token
# too, which in Python is the LAST token: a span at the start gets no sentinel when the last token is noised.
# course-llm exercise: 10_span_corruption
# expect-fail: mask_at_edges
# expect-hint: noise_mask[-1] is the LAST token


def span_corruption(tokens, noise_mask):
    inputs, targets, k = [], [], 0
    for i, (token, noise) in enumerate(zip(tokens, noise_mask)):
        if noise and not noise_mask[i - 1]:            # BUG: at i = 0 this reads noise_mask[-1]
            inputs.append(f"<extra_id_{k}>")
            targets.append(f"<extra_id_{k}>")
            k += 1
        (targets if noise else inputs).append(token)
    targets.append(f"<extra_id_{k}>")
    return inputs, targets

# Planted bug: the reference solution of 10_span_corruption rewritten to collect a span and write it out when a
# clean token follows; a span that ends at the last token is never written.
# course-llm exercise: 10_span_corruption
# expect-fail: mask_at_edges
# expect-hint: may end at the last token


def span_corruption(tokens, noise_mask):
    inputs, targets, span, k = [], [], [], 0
    for token, noise in zip(tokens, noise_mask):
        if noise:
            span.append(token)
            continue
        if span:
            inputs.append(f"<extra_id_{k}>")
            targets += [f"<extra_id_{k}>"] + span
            k, span = k + 1, []
        inputs.append(token)
    # BUG: a span still open here (noise at the end) is lost
    targets.append(f"<extra_id_{k}>")
    return inputs, targets

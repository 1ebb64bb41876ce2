# Planted bug: the reference solution of 10_span_corruption that keeps each sentinel of the inputs in the
# text, before the tokens of its span.
# course-llm exercise: 10_span_corruption
# expect-fail: random_masks spans_at_edges no_noise all_noise
# expect-hint: still hold sentinels


def span_reassemble(inputs, targets):
    spans, current = {}, None
    for token in targets:
        if token.startswith("<extra_id_"):
            current = spans[token] = []
        else:
            current.append(token)
    tokens, noise_mask = [], []
    for token in inputs:
        tokens.append(token)                                             # BUG: the sentinel too
        noise_mask.append(False)
        if token in spans:
            tokens += spans[token]
            noise_mask += [True] * len(spans[token])
    return tokens, noise_mask

# Planted bug: the reference solution of 10_span_corruption that marks only the first token of each span as
# noised (the tokens are right, the mask is not as soon as a span is two tokens long).
# course-llm exercise: 10_span_corruption
# expect-fail: random_masks spans_at_edges no_noise all_noise
# expect-hint: the tokens are right but noise_mask is not


def span_reassemble(inputs, targets):
    spans, current = {}, None
    for token in targets:
        if token.startswith("<extra_id_"):
            current = spans[token] = []
        else:
            current.append(token)
    tokens, noise_mask = [], []
    for token in inputs:
        hidden = spans.get(token)
        if hidden is None:
            tokens.append(token)
            noise_mask.append(False)
        else:
            tokens += hidden
            noise_mask += [True] + [False] * (len(hidden) - 1)           # BUG: the whole span is noise
    return tokens, noise_mask

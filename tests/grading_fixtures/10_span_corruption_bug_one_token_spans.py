# Planted bug: the reference solution of 10_span_corruption that takes only the token right after each
# sentinel of the targets as its span (spans of several tokens lose their tail).
# course-llm exercise: 10_span_corruption
# expect-fail: random_masks spans_at_edges no_noise all_noise
# expect-hint: tokens are missing


def span_reassemble(inputs, targets):
    spans = {}
    for i, token in enumerate(targets[:-1]):
        if token.startswith("<extra_id_"):
            spans[token] = [targets[i + 1]]                              # BUG: up to the NEXT sentinel
    tokens, noise_mask = [], []
    for token in inputs:
        hidden = spans.get(token)
        if hidden is None:
            tokens.append(token)
            noise_mask.append(False)
        else:
            tokens += hidden
            noise_mask += [True] * len(hidden)
    return tokens, noise_mask

# Planted bug: the reference solution of 12_response_mask that leaves the closing <|im_end|> out of the labels, so
# the model never learns to stop.
# course-llm exercise: 12_response_mask
# expect-fail: single_turn multi_turn ignore_index
# expect-hint: its closing <|im_end|>


def response_labels(ids, header, im_end, ignore_index=-100):
    labels, inside, t = [ignore_index] * len(ids), False, 0
    while t < len(ids):
        if not inside and list(ids[t:t + len(header)]) == list(header):
            inside, t = True, t + len(header)
            continue
        if inside:
            inside = ids[t] != im_end
            if inside:
                labels[t] = ids[t]
        t += 1
    return labels

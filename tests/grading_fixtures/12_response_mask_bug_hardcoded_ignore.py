# Planted bug: the reference solution of 12_response_mask with -100 hard-coded instead of ignore_index.
# course-llm exercise: 12_response_mask
# expect-fail: ignore_index
# expect-hint: do not hard-code -100


def response_labels(ids, header, im_end, ignore_index=-100):
    labels, inside, t = [-100] * len(ids), False, 0
    while t < len(ids):
        if not inside and list(ids[t:t + len(header)]) == list(header):
            inside, t = True, t + len(header)
            continue
        if inside:
            labels[t] = ids[t]
            inside = ids[t] != im_end
        t += 1
    return labels

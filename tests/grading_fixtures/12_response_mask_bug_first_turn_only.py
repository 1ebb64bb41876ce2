# Planted bug: the reference solution of 12_response_mask that trains only the first assistant reply.
# course-llm exercise: 12_response_mask
# expect-fail: multi_turn ignore_index
# expect-hint: every assistant reply is trained


def response_labels(ids, header, im_end, ignore_index=-100):
    labels, inside, done, t = [ignore_index] * len(ids), False, False, 0
    while t < len(ids):
        if not inside and not done and list(ids[t:t + len(header)]) == list(header):
            inside, t = True, t + len(header)
            continue
        if inside:
            labels[t] = ids[t]
            inside = ids[t] != im_end
            done = not inside
        t += 1
    return labels

# Planted bug: the reference solution of 02_bpe_merge whose merge scans from the right, so
# overlapping occurrences merge from the right ([7, 7, 7] with (7, 7) gives [7, X], not [X, 7]).
# Non-overlapping pairs merge correctly, so only the overlap check fails.
# course-llm exercise: 02_bpe_merge
# expect-fail: merge_overlapping
# expect-hint: merge from the left


def get_pair_counts(ids):
    counts = {}
    for pair in zip(ids, ids[1:]):
        counts[pair] = counts.get(pair, 0) + 1
    return counts


def merge(ids, pair, new_id):
    out, i = [], len(ids) - 1
    while i >= 0:  # BUG: scans right to left
        if i >= 1 and (ids[i - 1], ids[i]) == tuple(pair):
            out.append(new_id)
            i -= 2
        else:
            out.append(ids[i])
            i -= 1
    return out[::-1]

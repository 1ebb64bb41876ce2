# Planted bug: the reference solution of 02_bpe_merge whose merge scans from the right, so
# overlapping occurrences merge from the right ([7, 7, 7] with (7, 7) gives [7, X], not [X, 7]).
# Non-overlapping pairs merge correctly, so only the overlap check fails.
# course-llm exercise: 02_bpe_merge
# expect-fail: merge_overlapping
# expect-hint: merge from the left


def pair_positions(ids):
    positions = {}
    for i, pair in enumerate(zip(ids, ids[1:])):
        positions.setdefault(pair, []).append(i)
    return positions


def merge_with_positions(ids, pair, new_id):
    out, merged, i = [], [], len(ids) - 1
    while i >= 0:
        if i >= 1 and (ids[i - 1], ids[i]) == tuple(pair):  # BUG: scans right to left
            out.append(new_id)
            merged.append(i - 1)
            i -= 2
        else:
            out.append(ids[i])
            i -= 1
    return out[::-1], merged[::-1]

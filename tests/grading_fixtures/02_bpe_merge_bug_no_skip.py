# Planted bug: the reference solution of 02_bpe_merge whose merge moves one place, not two, after
# replacing a pair, so the pair's second id is kept too ([1, 2, 3] with (1, 2) gives [X, 2, 3]).
# course-llm exercise: 02_bpe_merge
# expect-fail: merge_random merge_overlapping merge_absent_or_short works_on_bytes
# expect-hint: jump two places


def pair_positions(ids):
    positions = {}
    for i, pair in enumerate(zip(ids, ids[1:])):
        positions.setdefault(pair, []).append(i)
    return positions


def merge_with_positions(ids, pair, new_id):
    out, merged, i = [], [], 0
    while i < len(ids):
        if i + 1 < len(ids) and (ids[i], ids[i + 1]) == tuple(pair):
            out.append(new_id)
            merged.append(i)
            i += 1  # BUG: jump over both ids of the pair
        else:
            out.append(ids[i])
            i += 1
    return out, merged

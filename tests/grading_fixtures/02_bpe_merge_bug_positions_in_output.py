# Planted bug: the reference solution of 02_bpe_merge whose merge records where new_id lands in the
# output instead of where the pair started in the input.
# course-llm exercise: 02_bpe_merge
# expect-fail: merge_random merge_overlapping merge_absent_or_short works_on_bytes
# expect-hint: positions in the input ids


def pair_positions(ids):
    positions = {}
    for i, pair in enumerate(zip(ids, ids[1:])):
        positions.setdefault(pair, []).append(i)
    return positions


def merge_with_positions(ids, pair, new_id):
    out, merged, i = [], [], 0
    while i < len(ids):
        if i + 1 < len(ids) and (ids[i], ids[i + 1]) == tuple(pair):
            merged.append(len(out))  # BUG: the position in the input is i
            out.append(new_id)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out, merged

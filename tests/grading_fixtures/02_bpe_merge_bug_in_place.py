# Planted bug: the reference solution of 02_bpe_merge whose merge edits the caller's list in place
# (and fails on bytes, which cannot be edited); the framework reports the changed input.
# course-llm exercise: 02_bpe_merge
# expect-fail: merge_random merge_overlapping merge_absent_or_short works_on_bytes
# expect-hint: in place


def pair_positions(ids):
    positions = {}
    for i, pair in enumerate(zip(ids, ids[1:])):
        positions.setdefault(pair, []).append(i)
    return positions


def merge_with_positions(ids, pair, new_id):
    i, merged, shift = 0, [], 0
    while i < len(ids) - 1:
        if (ids[i], ids[i + 1]) == tuple(pair):
            ids[i:i + 2] = [new_id]  # BUG: changes the input; work on a copy
            merged.append(i + shift)
            shift += 1
        i += 1
    return ids, merged

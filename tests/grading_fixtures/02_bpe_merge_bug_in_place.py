# Planted bug: the reference solution of 02_bpe_merge whose merge edits the caller's list in place
# (and fails on bytes, which cannot be edited); the framework reports the changed input.
# course-llm exercise: 02_bpe_merge
# expect-fail: merge_random merge_overlapping works_on_bytes
# expect-hint: in place


def get_pair_counts(ids):
    counts = {}
    for pair in zip(ids, ids[1:]):
        counts[pair] = counts.get(pair, 0) + 1
    return counts


def merge(ids, pair, new_id):
    i = 0
    while i < len(ids) - 1:
        if (ids[i], ids[i + 1]) == tuple(pair):
            ids[i:i + 2] = [new_id]  # BUG: changes the input; work on a copy
        i += 1
    return ids

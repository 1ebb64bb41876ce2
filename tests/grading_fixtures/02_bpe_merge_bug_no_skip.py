# Planted bug: the reference solution of 02_bpe_merge whose merge moves one place, not two, after
# replacing a pair, so the pair's second id is kept too ([1, 2, 3] with (1, 2) gives [X, 2, 3]).
# course-llm exercise: 02_bpe_merge
# expect-fail: merge_random merge_overlapping works_on_bytes
# expect-hint: jump two places


def get_pair_counts(ids):
    counts = {}
    for pair in zip(ids, ids[1:]):
        counts[pair] = counts.get(pair, 0) + 1
    return counts


def merge(ids, pair, new_id):
    out, i = [], 0
    while i < len(ids):
        if i + 1 < len(ids) and (ids[i], ids[i + 1]) == tuple(pair):
            out.append(new_id)
            i += 1  # BUG: should skip past the pair, i += 2
        else:
            out.append(ids[i])
            i += 1
    return out

# Planted bug: the reference solution of 02_bpe_merge whose pair_positions scans like str.count,
# skipping past each occurrence, so [7, 7, 7] has (7, 7) at [0] instead of [0, 1].
# course-llm exercise: 02_bpe_merge
# expect-fail: pair_counts_overlapping
# expect-hint: may overlap


def pair_positions(ids):
    positions = {}
    for pair in dict.fromkeys(zip(ids, ids[1:])):
        at, i = [], 0
        while i + 1 < len(ids):
            if (ids[i], ids[i + 1]) == pair:
                at.append(i)
                i += 2  # BUG: skips past each occurrence, like str.count
            else:
                i += 1
        positions[pair] = at
    return positions


def merge_with_positions(ids, pair, new_id):
    out, merged, i = [], [], 0
    while i < len(ids):
        if i + 1 < len(ids) and (ids[i], ids[i + 1]) == tuple(pair):
            out.append(new_id)
            merged.append(i)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out, merged


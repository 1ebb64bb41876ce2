# Planted bug: the reference solution of 02_bpe_merge whose get_pair_counts counts like
# str.count, skipping past each occurrence, so [7, 7, 7] has (7, 7) once instead of twice.
# course-llm exercise: 02_bpe_merge
# expect-fail: pair_counts_overlapping
# expect-hint: may overlap


def get_pair_counts(ids):
    counts = {}
    for pair in dict.fromkeys(zip(ids, ids[1:])):
        n, i = 0, 0
        while i + 1 < len(ids):
            if (ids[i], ids[i + 1]) == pair:
                n, i = n + 1, i + 2  # BUG: skips past each occurrence, like str.count
            else:
                i += 1
        counts[pair] = n
    return counts


def merge(ids, pair, new_id):
    out, i = [], 0
    while i < len(ids):
        if i + 1 < len(ids) and (ids[i], ids[i + 1]) == tuple(pair):
            out.append(new_id)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out

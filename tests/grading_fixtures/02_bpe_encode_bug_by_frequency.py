# Planted bug: the reference solution of 02_bpe_encode that applies the learned pair occurring most
# often in the data (as in training) instead of the one learned first (smallest rank).
# course-llm exercise: 02_bpe_encode
# expect-fail: learned_merges priority_by_rank ignores_dict_order gpt2_merges
# expect-hint: merged the most frequent
from course_llm.bpe import get_pair_counts, merge


def encode_with_merges(data, merges):
    ids = list(data)
    while len(ids) >= 2:
        counts = {p: n for p, n in get_pair_counts(ids).items() if p in merges}
        if not counts:
            break
        pair = max(counts, key=lambda p: (counts[p], -merges[p]))  # BUG: frequency, not rank
        ids = merge(ids, pair, merges[pair])
    return ids

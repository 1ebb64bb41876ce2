# Planted bug: the reference solution of 02_bpe_encode that merges the leftmost adjacent pair found
# in the table, whatever its rank.
# course-llm exercise: 02_bpe_encode
# expect-fail: learned_merges priority_by_rank ignores_dict_order gpt2_merges
# expect-hint: leftmost
from course_llm.bpe import merge


def encode_with_merges(data, merges):
    ids = list(data)
    while True:
        pair = next((p for p in zip(ids, ids[1:]) if p in merges), None)  # BUG: position, not rank
        if pair is None:
            return ids
        ids = merge(ids, pair, merges[pair])

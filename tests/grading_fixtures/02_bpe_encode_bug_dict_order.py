# Planted bug: the reference solution of 02_bpe_encode that applies each merge once, in the order
# of the dict's keys. Right when the dict is in training order (as train_bpe returns it), wrong for
# any other order.
# course-llm exercise: 02_bpe_encode
# expect-fail: ignores_dict_order
# expect-hint: its order is not the order of the merges
from course_llm.bpe import merge


def encode_with_merges(data, merges):
    ids = list(data)
    for pair, new_id in merges.items():  # BUG: the dict's order is not the rank order
        ids = merge(ids, pair, new_id)
    return ids

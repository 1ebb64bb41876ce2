# Planted bug: the reference that draws random ids from 0 .. vocab_size - 2 (randint's end is exclusive).
# course-llm exercise: 09_mlm_masking
# expect-fail: random_tokens_uniform
# expect-hint: excludes vocab_size itself


import torch


def mask_tokens(input_ids, vocab_size, mask_id, special_ids=(), mlm_probability=0.15, generator=None):
    special = torch.isin(input_ids, torch.as_tensor(list(special_ids), dtype=input_ids.dtype))
    probs = torch.full(input_ids.shape, float(mlm_probability))
    probs[special] = 0.0
    selected = torch.bernoulli(probs, generator=generator).bool()
    labels = torch.where(selected, input_ids, torch.full_like(input_ids, -100))
    inputs = input_ids.clone()
    masked = torch.bernoulli(torch.full(input_ids.shape, 0.8), generator=generator).bool() & selected
    inputs[masked] = mask_id
    random = torch.bernoulli(torch.full(input_ids.shape, 0.5), generator=generator).bool() & selected & ~masked
    random_ids = torch.randint(vocab_size - 1, input_ids.shape, generator=generator, dtype=input_ids.dtype)
    inputs[random] = random_ids[random]
    return inputs, labels

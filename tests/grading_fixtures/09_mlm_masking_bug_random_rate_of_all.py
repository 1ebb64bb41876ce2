# Planted bug: the reference drawing 'random' with probability 0.1 among the unmasked instead of 0.1 / 0.2 = 0.5.
# course-llm exercise: 09_mlm_masking
# expect-fail: replacement_rates
# expect-hint: too few random replacements


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
    random = torch.bernoulli(torch.full(input_ids.shape, 0.1), generator=generator).bool() & selected & ~masked
    random_ids = torch.randint(vocab_size, input_ids.shape, generator=generator, dtype=input_ids.dtype)
    inputs[random] = random_ids[random]
    return inputs, labels

# Planted bug: the reference that takes the labels from the corrupted inputs (so [MASK] ids become labels).
# course-llm exercise: 09_mlm_masking
# expect-fail: labels_and_unselected
# expect-hint: not from the corrupted copy


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
    random_ids = torch.randint(vocab_size, input_ids.shape, generator=generator, dtype=input_ids.dtype)
    inputs[random] = random_ids[random]
    labels = torch.where(selected, inputs, labels)
    return inputs, labels

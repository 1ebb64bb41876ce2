"""course_llm.icl: task families checked by brute force and closed forms; the training loop on a toy task."""
import itertools
import random
from functools import reduce

import pytest
import torch

from course_llm.gpt import GPT, GPTConfig
from course_llm.icl import (copy_or_guess_accuracy, fit_answers, mapping_batch, parity_batch,
                            permutation_parity, accuracy_by_shots)


def test_permutation_parity_matches_determinant_sign():
    perms = torch.stack([torch.randperm(7) for _ in range(200)])
    sign = torch.stack([torch.linalg.det(torch.eye(7)[p]) for p in perms])        # det of a permutation matrix = +-1
    assert torch.equal(permutation_parity(perms), (sign < 0).long())


@pytest.mark.parametrize("parity", [0, 1])
def test_mapping_batch_is_a_bijection_of_the_requested_parity(parity):
    n, K = 5, 40
    seq, targets = mapping_batch(100, n, K, parity=parity, generator=torch.Generator().manual_seed(parity))
    assert seq.shape == targets.shape == (100, 2 * K)
    assert torch.equal(targets[:, 1::2], seq[:, 1::2]) and bool((targets[:, 0::2] == -100).all())
    for row in seq:
        f = dict(zip(row[0::2].tolist(), row[1::2].tolist()))
        pairs = set(zip(row[0::2].tolist(), row[1::2].tolist()))
        assert len(pairs) == len(f)                                                 # a function
        assert len(set(f.values())) == len(f) and all(n <= v < 2 * n for v in f.values())   # injective
        if len(f) == n:                                                             # full permutation: check parity
            perm = [f[k] - n for k in range(n)]
            inv = sum(perm[i] > perm[j] for i, j in itertools.combinations(range(n), 2))
            assert inv % 2 == parity


def test_copy_or_guess_accuracy_by_simulation():
    rng = random.Random(0)
    n, k, trials = 4, 3, 40_000
    hits = 0
    for _ in range(trials):
        shots = [rng.randrange(n) for _ in range(k)]
        q = rng.randrange(n)
        hits += q in shots or rng.randrange(n) == 0
    assert abs(hits / trials - copy_or_guess_accuracy(n, k)) < 0.01


@pytest.mark.parametrize("cot", [False, True])
def test_parity_batch_answers(cot):
    seq, targets, y = parity_batch(50, 9, cot, torch.Generator().manual_seed(0))
    bits = seq[:, :9].tolist()
    assert y.tolist() == [reduce(lambda a, b: a ^ b, row) for row in bits]
    assert bool((seq[:, 9] == 2).all()) and bool((targets[:, :10] == -100).all())
    if cot:
        assert seq[:, 10:].tolist() == [[reduce(lambda a, b: a ^ b, row[:i + 1]) for i in range(9)] for row in bits]


def test_fit_answers_ignores_unmarked_positions():
    torch.manual_seed(0)
    model = GPT(GPTConfig.llama_style(vocab_size=6, block_size=8, n_layer=1, d_model=16, n_head=2, n_kv_head=1))
    seq = torch.tensor([[0, 5, 1, 5]] * 8)
    targets = torch.tensor([[-100, -100, -100, 5]] * 8)                 # only the last token counts
    losses = fit_answers(model, lambda: (seq, targets), 40, max_lr=1e-2)
    logits = model(seq)[0]
    assert losses[-1] < 0.05
    assert logits[0, 2].argmax().item() == 5
    assert not model.training


def test_accuracy_by_shots_matches_manual_argmax():
    model = GPT(GPTConfig.gpt2_style(vocab_size=8, block_size=8)).eval()
    seq, _ = mapping_batch(16, 4, 4, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        logits = model(seq)[0]
    want = [(logits[:, 2 * k].argmax(-1) == seq[:, 2 * k + 1]).float().mean().item() for k in range(4)]
    assert accuracy_by_shots(model, seq) == pytest.approx(want)


def test_validation():
    with pytest.raises(ValueError, match="parity"):
        mapping_batch(2, 4, 3, parity=2)
    with pytest.raises(ValueError, match="n_keys"):
        mapping_batch(2, 1, 3)
    with pytest.raises(TypeError, match="model"):
        fit_answers(torch.nn.Linear(2, 2), None, 1)
    with pytest.raises(ValueError, match="seq"):
        accuracy_by_shots(GPT(GPTConfig.gpt2_style(vocab_size=8, block_size=8)), torch.zeros(2, 3, dtype=torch.long))

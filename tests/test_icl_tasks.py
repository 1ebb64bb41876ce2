"""course_llm.icl_tasks: the task families of chapter 11, checked by brute force, closed forms and
string oracles."""
import itertools
import random
from functools import reduce

import pytest
import torch

from course_llm.icl_tasks import (EQUALS, STRING_RULES, copy_or_guess_accuracy, mapping_batch, parity_batch,
                                  permutation_parity, rule_batch, show_rule_prompt)


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
    assert bool((seq[:, 9] == EQUALS).all()) and bool((targets[:, :10] == -100).all())
    if cot:
        assert seq[:, 10:].tolist() == [[reduce(lambda a, b: a ^ b, row[:i + 1]) for i in range(9)] for row in bits]



# ---- string rules: an independent oracle on Python strings -------------------------------------------

ALPHA = "abcdefghijklmnopqrstuvwxyz"
ORACLE = {"copy": lambda s: s, "reverse": lambda s: "".join(reversed(s)),
          "rotate_left": lambda s: s[1:] + s[0], "rotate_right": lambda s: s[-1] + s[:-1],
          "swap_ends": lambda s: s[-1] + s[1:-1] + s[0], "double": lambda s: "".join(c * 2 for c in s),
          "repeat_half": lambda s: s + s[len(s) // 2:]}


def parse_rows(seq, targets, A):
    """Split each row into [(input, output)] by hand from the token ids; check the labels on the way."""
    arrow, sep, pad = A, A + 1, A + 2
    out = []
    for row, lab in zip(seq.tolist(), targets.tolist()):
        pairs, i = [], 0
        while i < len(row) and row[i] != pad:
            j = row.index(arrow, i)
            k = row.index(sep, j)
            pairs.append(("".join(ALPHA[t] for t in row[i:j]), "".join(ALPHA[t] for t in row[j + 1:k])))
            assert lab[i:j + 1] == [-100] * (j + 1 - i)                  # input and "->": not asked
            assert lab[j + 1:k + 1] == row[j + 1:k + 1]                  # output and ";": asked
            i = k + 1
        assert all(t == pad for t in row[i:]) and all(t == -100 for t in lab[i:])   # padding only at the end
        out.append(pairs)
    return out


@pytest.mark.parametrize("name", sorted(ORACLE))
def test_rule_batch_matches_string_oracle(name):
    A, L, K = 8, 4, 5
    seq, targets = rule_batch(40, K, [name], torch.Generator().manual_seed(1), n_letters=A, length=L)
    assert seq.shape == targets.shape
    for pairs in parse_rows(seq, targets, A):
        assert len(pairs) == K + 1
        for x, y in pairs:
            assert len(x) == L == len(set(x)) and y == ORACLE[name](x)


def test_rule_batch_shift_fixed_and_random():
    A = 7
    seq, t = rule_batch(30, 4, [("shift", 3)], torch.Generator().manual_seed(0), n_letters=A, length=3)
    for pairs in parse_rows(seq, t, A):
        for x, y in pairs:
            assert y == "".join(ALPHA[(ALPHA.index(c) + 3) % A] for c in x)
    seq, t = rule_batch(60, 4, [("shift", None)], torch.Generator().manual_seed(0), n_letters=A, length=3)
    shifts = set()
    for pairs in parse_rows(seq, t, A):
        ks = {(ALPHA.index(y[i]) - ALPHA.index(x[i])) % A for x, y in pairs for i in range(3)}
        assert len(ks) == 1 and 0 not in ks                     # one shift per task, never the identity
        shifts |= ks
    assert shifts == set(range(1, A))                           # every shift gets drawn


@pytest.mark.parametrize("parity", [0, 1])
def test_rule_batch_substitute_is_a_fresh_bijection_of_the_parity(parity):
    A = 5
    seq, t = rule_batch(60, 12, [("substitute", parity)], torch.Generator().manual_seed(parity), n_letters=A, length=3)
    maps = set()
    for pairs in parse_rows(seq, t, A):
        f = {}
        for x, y in pairs:
            for a, b in zip(x, y):
                assert f.setdefault(a, b) == b                  # a function within the task
        assert len(set(f.values())) == len(f)                   # injective
        if len(f) == A:
            perm = [ALPHA.index(f[c]) for c in ALPHA[:A]]
            assert sum(perm[i] > perm[j] for i, j in itertools.combinations(range(A), 2)) % 2 == parity
            maps.add(tuple(perm))
    assert len(maps) > 10                                       # fresh per task, not one fixed map


def test_rule_batch_mixed_lengths_are_padded_and_rules_all_drawn():
    A = 8
    seq, t = rule_batch(80, 2, ["copy", "double", "repeat_half"], torch.Generator().manual_seed(2), n_letters=A, length=4)
    seen = set()
    for pairs in parse_rows(seq, t, A):
        names = {n for n in ("copy", "double", "repeat_half") if all(y == ORACLE[n](x) for x, y in pairs)}
        assert len(names) == 1
        seen |= names
    assert seen == {"copy", "double", "repeat_half"}
    assert seq.size(1) == 3 * (4 + 1 + 8 + 1)                   # the longest row: double
    assert set(STRING_RULES) >= set(ORACLE) | {"shift", "substitute"}


def test_rule_batch_is_seeded():
    a = rule_batch(4, 3, ["reverse", ("shift", None)], torch.Generator().manual_seed(7))
    b = rule_batch(4, 3, ["reverse", ("shift", None)], torch.Generator().manual_seed(7))
    assert all(torch.equal(x, y) for x, y in zip(a, b))


@pytest.mark.parametrize("kwargs, match", [
    (dict(rules=[]), "rules"), (dict(rules="reverse"), "rules"), (dict(rules=["reverso"]), "reverso"),
    (dict(rules=[("shift", 0)]), "shift"), (dict(rules=[("shift", 8)]), "shift"),
    (dict(rules=[("substitute", 2)]), "parity"), (dict(rules=[("reverse", 1)]), "no parameter"),
    (dict(rules=[("shift", 1, 2)]), "pair"), (dict(length=9), "length"), (dict(length=1), "length"),
    (dict(n_shots=-1), "n_shots"), (dict(batch_size=0), "batch_size"), (dict(n_letters=1), "n_letters"),
])
def test_rule_batch_validation(kwargs, match):
    args = dict(batch_size=2, n_shots=1, rules=["reverse"], n_letters=8, length=3) | kwargs
    with pytest.raises(ValueError, match=match):
        rule_batch(**args)


def test_show_rule_prompt():
    assert show_rule_prompt(torch.tensor([2, 0, 8, 0, 2, 9, 10, 10]), 8) == "ca->ac;"


# ---- bad input: every public function names the argument ------------------------------------------
@pytest.mark.parametrize("call, err, match", [
    (lambda: permutation_parity(torch.tensor([[0, 0, 1]])), ValueError, "perm"),
    (lambda: permutation_parity(torch.tensor([[0.0, 1.0]])), TypeError, "perm"),
    (lambda: permutation_parity(torch.tensor([0, 1])), ValueError, "perm"),
    (lambda: mapping_batch(0, 4, 3), ValueError, "batch_size"),
    (lambda: mapping_batch(2, 4, 0), ValueError, "n_shots"),
    (lambda: mapping_batch(2, 4.0, 3), TypeError, "n_keys"),
    (lambda: mapping_batch(2, 4, 3, parity=True), TypeError, "parity"),
    (lambda: mapping_batch(2, 4, 3, generator=0), TypeError, "generator"),
    (lambda: copy_or_guess_accuracy(0, 1), ValueError, "n_keys"),
    (lambda: copy_or_guess_accuracy(4, -1), ValueError, "k"),
    (lambda: rule_batch(2, 1, ["reverse"], generator="seed"), TypeError, "generator"),
    (lambda: rule_batch(2.0, 1, ["reverse"]), TypeError, "batch_size"),
    (lambda: show_rule_prompt([0, 11], 8), ValueError, "tokens"),
    (lambda: show_rule_prompt([0, 1], 27), ValueError, "n_letters"),
    (lambda: parity_batch(0, 4, True), ValueError, "batch_size"),
    (lambda: parity_batch(2, 0, True), ValueError, "n_bits"),
    (lambda: parity_batch(2, 4, "yes"), TypeError, "chain_of_thought"),
])
def test_bad_inputs(call, err, match):
    with pytest.raises(err, match=match):
        call()

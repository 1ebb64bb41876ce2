"""Tests of course_llm.speculative: greedy parity with generate, the exact output law, chi-square,
prompt lookup against a brute-force search, bad input."""

import random

import pytest
import torch

from course_llm.generate import generate
from course_llm.gpt import GPT
from course_llm.gpt_config import GPTConfig
from course_llm.speculative import (
    prompt_lookup_draft,
    prompt_lookup_generate,
    speculative_generate,
)

V = 5


def _tiny(seed, n_layer=1, vocab=V, sharpen=30.0):
    torch.manual_seed(seed)
    cfg = GPTConfig.llama_style(vocab_size=vocab, max_len=64, n_layer=n_layer, d_model=16, n_head=2,
                                n_kv_head=1, d_ff=32)
    m = GPT(cfg).eval()
    with torch.no_grad():
        m.lm_head.weight.mul_(sharpen)
    return m


@pytest.fixture(scope="module")
def pair():
    return _tiny(1, n_layer=2), _tiny(2)


def _p(model, seq):
    with torch.no_grad():
        return model(torch.tensor([seq]))[0][0, -1].double().softmax(-1)


def _chi_square_pvalue(counts, exact, n):
    keep = exact > 1e-9
    assert counts[~keep].sum() == 0
    expected = exact[keep] * n
    stat = ((counts[keep].double() - expected) ** 2 / expected).sum()
    dof = torch.tensor((int(keep.sum()) - 1) / 2, dtype=torch.float64)
    return torch.special.gammaincc(dof, stat / 2)


@pytest.mark.parametrize("k", [0, 1, 3, 6])
def test_greedy_equals_target_greedy(pair, k):
    target, draft = pair
    prompt = torch.tensor([[0, 3]])
    assert torch.equal(speculative_generate(target, draft, prompt, 25, k=k, temperature=0),
                       generate(target, prompt, 25, temperature=0))


def test_k0_is_generate_and_identical_draft_accepts_all(pair):
    target, draft = pair
    prompt = torch.tensor([[2]])
    for kwargs in (dict(), dict(top_k=3), dict(top_p=0.8, temperature=0.7)):
        a = speculative_generate(target, draft, prompt, 15, k=0, generator=torch.Generator().manual_seed(1), **kwargs)
        b = generate(target, prompt, 15, generator=torch.Generator().manual_seed(1), **kwargs)
        assert torch.equal(a, b)
    info = {}
    speculative_generate(target, target, prompt, 15, k=4, generator=torch.Generator().manual_seed(1), stats=info)
    assert info["acceptance_rate"] == 1.0 and info["target_calls"] == 3 and info["new_tokens"] == 15
    assert info["rounds"] == [(4, 4)] * 3 and info["rejected"] == 0 and info["draft_calls"] == 12


def test_first_token_law_is_the_target_law(pair):
    """One round with k=1: emitted-token law from the acceptance and residual formulas equals p."""
    target, draft = pair
    p, q = _p(target, [1, 2]), _p(draft, [1, 2])
    accept = torch.minimum(torch.ones_like(p), p / q)
    residual = (p - q).clamp(min=0) / (p - q).clamp(min=0).sum()
    law = q * accept + (q * (1 - accept)).sum() * residual
    assert torch.allclose(law, p, atol=1e-12)


def test_point_mass_draft_law_is_the_target_law(pair):
    """A named guess d is q = one_hot(d): accept with p(d), else p without d, renormalised."""
    target, _ = pair
    p = _p(target, [1, 2])
    for d in range(V):
        emitted = torch.zeros(V, dtype=torch.float64)
        emitted[d] += p[d]  # accepted
        rest = p.clone()
        rest[d] = 0
        emitted += (1 - p[d]) * rest / rest.sum()  # rejected: the residual
        assert torch.allclose(emitted, p, atol=1e-12)


def test_chi_square_of_the_first_two_tokens(pair):
    target, draft = pair
    exact = torch.stack([_p(target, [1, 2])[a] * _p(target, [1, 2, a]) for a in range(V)]).flatten()
    g = torch.Generator().manual_seed(0)
    counts = torch.zeros(V * V)
    n = 500
    for _ in range(n):
        out = speculative_generate(target, draft, torch.tensor([[1, 2]]), 2, k=2, generator=g)
        counts[out[0, 2] * V + out[0, 3]] += 1
    assert _chi_square_pvalue(counts, exact, n) > 1e-3


def test_eos_and_budget(pair):
    target, draft = pair
    prompt = torch.tensor([[0]])
    full = generate(target, prompt, 30, temperature=0)
    eos = int(full[0, 5])
    got = speculative_generate(target, draft, prompt, 30, k=4, temperature=0, eos_id=eos)
    want = generate(target, prompt, 30, temperature=0, eos_id=eos)
    assert torch.equal(got, want)
    info = {}
    out = speculative_generate(target, draft, prompt, 7, k=5, generator=torch.Generator().manual_seed(0), stats=info)
    assert out.shape == (1, 8) and info["new_tokens"] == 7
    assert speculative_generate(target, draft, prompt, 0, k=3).shape == (1, 1)


def test_bad_inputs(pair):
    target, draft = pair
    prompt = torch.tensor([[1, 2]])
    with pytest.raises(ValueError, match="vocabulary"):
        speculative_generate(target, _tiny(3, vocab=V + 1), prompt, 3)
    with pytest.raises(ValueError, match="`k`"):
        speculative_generate(target, draft, prompt, 3, k=-1)
    with pytest.raises(TypeError, match="`k`"):
        speculative_generate(target, draft, prompt, 3, k=2.0)
    with pytest.raises(ValueError, match="max_new_tokens"):
        speculative_generate(target, draft, prompt, -2)
    with pytest.raises(ValueError, match="one non-empty prompt"):
        speculative_generate(target, draft, torch.tensor([[1], [2]]), 3)
    with pytest.raises(ValueError, match="idx"):
        speculative_generate(target, draft, torch.tensor([[1, 9]]), 3)
    with pytest.raises(TypeError, match="idx"):
        speculative_generate(target, draft, torch.tensor([[1.0, 2.0]]), 3)
    with pytest.raises(ValueError, match="context window"):
        speculative_generate(target, draft, prompt, 60, k=4)
    with pytest.raises(ValueError, match="temperature"):
        speculative_generate(target, draft, prompt, 3, temperature=-1.0)
    with pytest.raises(ValueError, match="top_k"):
        speculative_generate(target, draft, prompt, 3, top_k=0)
    with pytest.raises(ValueError, match="eos_id"):
        speculative_generate(target, draft, prompt, 3, eos_id=V)
    with pytest.raises(TypeError, match="stats"):
        speculative_generate(target, draft, prompt, 3, stats=[])
    with pytest.raises(TypeError, match="generator"):
        speculative_generate(target, draft, prompt, 3, generator=0)
    with pytest.raises(TypeError, match="draft"):
        speculative_generate(target, torch.nn.Linear(2, 2), prompt, 3)


# ---- prompt lookup ----------------------------------------------------------------------------

def _brute_force_lookup(seq, n, k):
    """Every earlier start i whose n tokens equal the last n (i + n < len: not the suffix
    itself), the latest of them, and what follows it."""
    L = len(seq)
    starts = [i for i in range(L) if i + n < L and tuple(seq[i:i + n]) == tuple(seq[L - n:])]
    if L < n + 1 or not starts:
        return []
    i = max(starts)
    return list(seq[i + n:i + n + k])


def test_lookup_against_brute_force():
    r = random.Random(0)
    for _ in range(3000):
        seq = [r.randrange(r.choice([2, 3, 6])) for _ in range(r.randrange(0, 40))]
        n, k = r.randrange(1, 6), r.randrange(0, 10)
        want = _brute_force_lookup(seq, n, k)
        assert prompt_lookup_draft(seq, n, k) == want, (seq, n, k)
        assert prompt_lookup_draft(torch.tensor(seq, dtype=torch.long), n, k) == want


def test_lookup_examples():
    assert prompt_lookup_draft([5, 1, 2, 3, 4, 1, 2], n=2, k=3) == [3, 4, 1]
    assert prompt_lookup_draft([5, 1, 2, 3, 4, 1, 2], n=2, k=10) == [3, 4, 1, 2]  # to the end
    assert prompt_lookup_draft([7, 7, 7], n=1, k=4) == [7]  # latest earlier occurrence: index 1
    assert prompt_lookup_draft([7, 7, 7], n=2, k=4) == [7]  # the match may overlap the suffix
    assert prompt_lookup_draft([1, 2, 3], n=3, k=4) == []  # the suffix itself does not count
    assert prompt_lookup_draft([], n=1, k=4) == [] and prompt_lookup_draft([1, 1], n=1, k=0) == []


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lookup_greedy_equals_plain_greedy(seed):
    """Random tiny models (small vocabularies repeat, so guesses are made and accepted)."""
    r = random.Random(seed)
    accepted = 0
    for trial in range(4):
        vocab = r.choice([3, 5, 8])
        target = _tiny(100 * seed + trial, n_layer=r.choice([1, 2]), vocab=vocab, sharpen=r.choice([1.0, 30.0]))
        prompt = torch.tensor([[r.randrange(vocab) for _ in range(r.randrange(1, 12))]])
        want = generate(target, prompt, 30, temperature=0)
        for n in (1, 2, 3):
            for k in (0, 2, 9):
                info = {}
                got = prompt_lookup_generate(target, prompt, 30, n=n, k=k, temperature=0, stats=info)
                assert torch.equal(got, want), (seed, trial, n, k)
                assert info["draft_calls"] == 0 and info["new_tokens"] == 30
                assert info["target_calls"] == len(info["rounds"])
                accepted += info["accepted"]
    assert accepted > 0


def test_lookup_stats_and_eos(pair):
    target, _ = pair
    prompt = torch.tensor([[1, 2, 3, 1, 2]])
    info = {}
    out = prompt_lookup_generate(target, prompt, 20, n=2, k=4, temperature=0, stats=info)
    rounds = info["rounds"]
    assert info["target_calls"] == len(rounds) and info["proposed"] == sum(d for d, _ in rounds)
    assert info["accepted"] == sum(a for _, a in rounds)
    assert info["rejected"] == sum(a < d for d, a in rounds) and all(0 <= a <= d for d, a in rounds)
    assert rounds[0][0] == 3  # "1 2" occurred before: the draft is what followed it, "3 1 2"
    full = generate(target, prompt, 30, temperature=0)
    eos = int(full[0, 9])
    got = prompt_lookup_generate(target, prompt, 30, n=1, k=4, temperature=0, eos_id=eos)
    assert torch.equal(got, generate(target, prompt, 30, temperature=0, eos_id=eos))
    assert prompt_lookup_generate(target, prompt, 0).shape == (1, 5)
    assert out.shape == (1, 25)


def test_lookup_without_matches_is_generate(pair):
    """The last token never occurred before (and then the budget leaves no room for a guess):
    no guesses, and the draws are generate's, one for one; k=0 likewise."""
    target, _ = pair
    prompt = torch.tensor([[0, 1, 2, 3, 4]])
    for kwargs in (dict(), dict(top_k=2, temperature=0.8)):
        info = {}
        a = prompt_lookup_generate(target, prompt, 2, n=1, k=4, generator=torch.Generator().manual_seed(3),
                                   stats=info, **kwargs)
        b = generate(target, prompt, 2, generator=torch.Generator().manual_seed(3), **kwargs)
        assert torch.equal(a, b) and info["proposed"] == 0 and info["target_calls"] == 2
        a = prompt_lookup_generate(target, prompt, 12, k=0, generator=torch.Generator().manual_seed(3), **kwargs)
        b = generate(target, prompt, 12, generator=torch.Generator().manual_seed(3), **kwargs)
        assert torch.equal(a, b)


def test_lookup_sampling_chi_square(pair):
    """Sampling with a named guess: the first two tokens follow the target's exact law."""
    target, _ = pair
    seq = [3, 0, 4, 3]  # "3" occurred before: the first round drafts "0 4"
    assert prompt_lookup_draft(seq, 1, 2) == [0, 4]
    exact = torch.stack([_p(target, seq)[a] * _p(target, seq + [a]) for a in range(V)]).flatten()
    g = torch.Generator().manual_seed(0)
    counts = torch.zeros(V * V)
    n = 500
    for _ in range(n):
        out = prompt_lookup_generate(target, torch.tensor([seq]), 2, n=1, k=2, generator=g)
        counts[out[0, 4] * V + out[0, 5]] += 1
    assert _chi_square_pvalue(counts, exact, n) > 1e-3


def test_lookup_bad_inputs(pair):
    target, _ = pair
    prompt = torch.tensor([[1, 2]])
    with pytest.raises(ValueError, match="`n`"):
        prompt_lookup_draft([1, 2], n=0)
    with pytest.raises(TypeError, match="`n`"):
        prompt_lookup_draft([1, 2], n=1.5)
    with pytest.raises(ValueError, match="`k`"):
        prompt_lookup_draft([1, 2], k=-1)
    with pytest.raises(TypeError, match="seq"):
        prompt_lookup_draft([1, 2.0])
    with pytest.raises(TypeError, match="seq"):
        prompt_lookup_draft(torch.tensor([1.0, 2.0]))
    with pytest.raises(ValueError, match="seq"):
        prompt_lookup_draft(torch.tensor([[1, 2]]))
    with pytest.raises(ValueError, match="`n`"):
        prompt_lookup_generate(target, prompt, 3, n=0)
    with pytest.raises(ValueError, match="`k`"):
        prompt_lookup_generate(target, prompt, 3, k=-1)
    with pytest.raises(ValueError, match="context window"):
        prompt_lookup_generate(target, prompt, 60, k=8)
    with pytest.raises(ValueError, match="one non-empty prompt"):
        prompt_lookup_generate(target, torch.tensor([[1], [2]]), 3)
    with pytest.raises(ValueError, match="temperature"):
        prompt_lookup_generate(target, prompt, 3, temperature=-1.0)
    with pytest.raises(TypeError, match="stats"):
        prompt_lookup_generate(target, prompt, 3, stats=[])
    with pytest.raises(TypeError, match="target"):
        prompt_lookup_generate(torch.nn.Linear(2, 2), prompt, 3)

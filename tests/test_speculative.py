"""Tests of course_llm.speculative: greedy parity with generate, the exact output law, chi-square, bad input."""

import pytest
import torch

from course_llm.generate import generate
from course_llm.gpt import GPT, GPTConfig
from course_llm.speculative import speculative_generate

V = 5


def _tiny(seed, n_layer=1, vocab=V, sharpen=30.0):
    torch.manual_seed(seed)
    cfg = GPTConfig.llama_style(vocab_size=vocab, block_size=64, n_layer=n_layer, d_model=16, n_head=2,
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


def test_first_token_law_is_the_target_law(pair):
    """One round with k=1: emitted-token law from the acceptance and residual formulas equals p."""
    target, draft = pair
    p, q = _p(target, [1, 2]), _p(draft, [1, 2])
    accept = torch.minimum(torch.ones_like(p), p / q)
    residual = (p - q).clamp(min=0) / (p - q).clamp(min=0).sum()
    law = q * accept + (q * (1 - accept)).sum() * residual
    assert torch.allclose(law, p, atol=1e-12)


def test_chi_square_of_the_first_two_tokens(pair):
    target, draft = pair
    exact = torch.stack([_p(target, [1, 2])[a] * _p(target, [1, 2, a]) for a in range(V)]).flatten()
    g = torch.Generator().manual_seed(0)
    counts = torch.zeros(V * V)
    n = 500
    for _ in range(n):
        out = speculative_generate(target, draft, torch.tensor([[1, 2]]), 2, k=2, generator=g)
        counts[out[0, 2] * V + out[0, 3]] += 1
    keep = exact > 1e-9
    assert counts[~keep].sum() == 0
    expected = exact[keep] * n
    stat = ((counts[keep].double() - expected) ** 2 / expected).sum()
    dof = torch.tensor((int(keep.sum()) - 1) / 2, dtype=torch.float64)
    assert torch.special.gammaincc(dof, stat / 2) > 1e-3                 # chi-square p-value


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
    with pytest.raises(TypeError, match="draft"):
        speculative_generate(target, torch.nn.Linear(2, 2), prompt, 3)

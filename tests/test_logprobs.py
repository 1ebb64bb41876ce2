"""course_llm.logprobs (section 13.2): the log-probability helpers shared by rlhf, ppo and grpo,
against oracles (torch's cross-entropy, one prefix at a time through the model)."""
import math

import pytest
import torch
import torch.nn.functional as F

import course_llm.grpo as grpo
import course_llm.ppo as ppo
from course_llm.gpt import GPT
from course_llm.gpt_config import GPTConfig
from course_llm.logprobs import (check_rl_models, entropy_from_logits, masked_mean, masked_normalize,
                                 sequence_logprobs, token_logprobs)


def tiny(vocab_size=7, seed=0):
    torch.manual_seed(seed)
    cfg = GPTConfig.gpt2_style(vocab_size=vocab_size, max_len=8, n_layer=1, d_model=16)
    return GPT(cfg).eval()


def test_token_logprobs_is_minus_the_cross_entropy():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 6, 11, generator=g)
    ids = torch.randint(0, 11, (3, 6), generator=g)
    oracle = -F.cross_entropy(logits[:, :-1].reshape(-1, 11), ids[:, 1:].reshape(-1),
                              reduction="none").view(3, 5)
    assert torch.allclose(token_logprobs(logits, ids), oracle, atol=1e-6)


def test_token_logprobs_accepts_masked_logits():
    logits = torch.zeros(1, 3, 4)
    logits[..., 3] = float("-inf")  # a banned token: probability 0, the others 1/3
    out = token_logprobs(logits, torch.tensor([[0, 1, 2]]))
    assert torch.allclose(out, torch.full((1, 2), -torch.log(torch.tensor(3.0))))


def test_sequence_logprobs_is_the_sum_over_prefixes_one_at_a_time():
    m = tiny()
    ids = torch.tensor([[1, 2, 3, 4, 5], [6, 5, 4, 3, 2]])
    mask = torch.tensor([[False, False, True, True, True], [False, True, True, False, False]])
    with torch.no_grad():
        got = sequence_logprobs(m, ids, mask)
        oracle = torch.zeros(2)
        for b in range(2):
            for t in range(1, 5):
                if mask[b, t]:
                    oracle[b] += m(ids[b:b + 1, :t])[0][0, -1].log_softmax(-1)[ids[b, t]]
    assert torch.allclose(got, oracle, atol=1e-5)


def test_the_trainers_use_these_objects():
    assert grpo.token_logprobs is token_logprobs and grpo.check_rl_models is check_rl_models
    assert grpo.masked_mean is masked_mean and grpo.entropy_from_logits is entropy_from_logits
    assert ppo.token_logprobs is token_logprobs and ppo.check_rl_models is check_rl_models


@pytest.mark.parametrize("logits, ids, error, phrase", [
    (torch.zeros(2, 4), torch.zeros(2, 4, dtype=torch.long), ValueError, "logits"),        # 2-D
    (torch.zeros(1, 3, 4, dtype=torch.long), torch.zeros(1, 3, dtype=torch.long), TypeError, "logits"),
    (torch.zeros(1, 3, 4), torch.zeros(1, 3), TypeError, "ids"),                          # float ids
    (torch.zeros(1, 3, 4), torch.zeros(1, 2, dtype=torch.long), ValueError, "ids"),        # shape
    (torch.zeros(1, 3, 4), torch.tensor([[0, 4, 1]]), ValueError, "ids"),                  # id >= V
    (torch.zeros(1, 3, 4), torch.tensor([[0, -1, 1]]), ValueError, "ids"),                 # negative
    (torch.full((1, 3, 4), float("nan")), torch.zeros(1, 3, dtype=torch.long), ValueError, "NaN"),
    (torch.full((1, 3, 4), float("inf")), torch.zeros(1, 3, dtype=torch.long), ValueError, "inf"),
    (torch.zeros(1, 1, 4), torch.zeros(1, 1, dtype=torch.long), ValueError, "2 positions"),
])
def test_token_logprobs_rejects_bad_input(logits, ids, error, phrase):
    with pytest.raises(error, match=phrase):
        token_logprobs(logits, ids)


@pytest.mark.parametrize("ids, mask, error, phrase", [
    (torch.tensor([1, 2, 3]), torch.tensor([False, True, True]), ValueError, "ids"),          # 1-D
    (torch.tensor([[1.0, 2.0, 3.0]]), torch.tensor([[False, True, True]]), TypeError, "ids"),
    (torch.tensor([[1, 2, 3]]), torch.tensor([[0, 1, 1]]), TypeError, "response_mask"),       # not bool
    (torch.tensor([[1, 2, 3]]), torch.tensor([[False, True]]), ValueError, "response_mask"),  # shape
    (torch.tensor([[1, 2, 3]]), torch.tensor([[True, True, True]]), ValueError, "position 0"),
])
def test_sequence_logprobs_rejects_bad_input(ids, mask, error, phrase):
    with pytest.raises(error, match=phrase):
        sequence_logprobs(tiny(), ids, mask)


def test_check_rl_models_accepts_a_matching_pair():
    m = tiny()
    assert check_rl_models(m, tiny(seed=1), len, "reward_fn", "be callable") is None


@pytest.mark.parametrize("args, error, phrase", [
    (("policy", "ref"), TypeError, "`policy` must be a course_llm.gpt.GPT"),
    (("model", None), TypeError, "`ref` must be a course_llm.gpt.GPT, got NoneType"),
    (("model", "other vocab"), ValueError, "share a vocabulary, got 7 and 9"),
])
def test_check_rl_models_rejects_bad_models(args, error, phrase):
    models = {"model": tiny(), "other vocab": tiny(vocab_size=9), "policy": "policy", "ref": None}
    policy, ref = (models.get(a, a) for a in args)
    with pytest.raises(error, match=phrase):
        check_rl_models(policy, ref, len, "reward_fn", "be callable")


def test_check_rl_models_rejects_a_reward_that_is_not_callable():
    with pytest.raises(TypeError, match="`reward_model` must map ids"):
        check_rl_models(tiny(), tiny(), 3.0, "reward_model", "map ids to rewards")


# ---- masked_mean / masked_normalize: against loops that read one entry at a time ----------

def _case(shape=(3, 4, 5), seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g, dtype=torch.float64)
    mask = torch.rand(*shape, generator=g) < 0.5
    mask[0], mask[:, 0], mask[..., 0] = True, True, True   # every slice along every dim keeps one
    return x, mask


def _loop(x, mask, dim, reduce):
    """Reduce the selected entries of each slice along `dim` with `reduce(list)`, by index."""
    import itertools
    if dim is None:
        return torch.tensor(reduce([x[i].item() for i in itertools.product(*map(range, x.shape))
                                    if mask[i]]), dtype=x.dtype)
    dim %= x.ndim
    out_shape = [n for d, n in enumerate(x.shape) if d != dim]
    out = torch.empty(out_shape, dtype=x.dtype)
    for rest in itertools.product(*map(range, out_shape)):
        vals = []
        for k in range(x.shape[dim]):
            i = rest[:dim] + (k,) + rest[dim:]
            if mask[i]:
                vals.append(x[i].item())
        out[rest] = reduce(vals)
    return out


@pytest.mark.parametrize("dim", [None, 0, 1, 2, -1])
def test_masked_mean_and_normalize_match_loops(dim):
    x, mask = _case()
    assert torch.allclose(masked_mean(x, mask, dim), _loop(x, mask, dim, lambda v: sum(v) / len(v)))
    assert torch.allclose(masked_normalize(x, mask, 3.0, dim), _loop(x, mask, dim, lambda v: sum(v) / 3.0))


def test_masked_mean_gradient_closed_form_and_inf_outside_the_mask():
    x, mask = _case((4, 6), seed=1)
    x = x.masked_fill(~mask, float("-inf")).requires_grad_()       # banned tokens, never read
    masked_mean(x, mask, dim=1).sum().backward()
    want = mask / mask.sum(1, keepdim=True)                          # d mean / d x = m / count
    assert torch.equal(torch.isfinite(masked_mean(x, mask)), torch.tensor(True))
    assert torch.allclose(x.grad, want.double())
    x.grad = None
    masked_normalize(x, mask, 2.5).backward()
    assert torch.allclose(x.grad, mask.double() / 2.5)


def test_masked_helpers_accept_a_0_1_mask_and_match_torch_mean():
    x, mask = _case((5, 3), seed=2)
    for m in (mask.long(), mask.float()):
        assert torch.equal(masked_mean(x, m, 0), masked_mean(x, mask, 0))
    full = torch.ones_like(mask)
    assert torch.allclose(masked_mean(x, full, 1), x.mean(1))        # all selected: torch's mean
    assert torch.allclose(masked_normalize(x, full, 1.0), x.sum())


ROW2_EMPTY = torch.ones(4, 3, dtype=torch.bool).index_fill(0, torch.tensor([2]), False)


@pytest.mark.parametrize("call, err, match", [
    (lambda x, m: masked_mean(x, m[:, :2]), ValueError, "same shape"),
    (lambda x, m: masked_mean(x, m.float() * 0.5), ValueError, "bool"),           # not a 0/1 mask
    (lambda x, m: masked_mean(x, m.long() * 2), ValueError, "bool"),
    (lambda x, m: masked_mean(x.long(), m), TypeError, "x"),
    (lambda x, m: masked_mean(x.tolist(), m), TypeError, "x"),
    (lambda x, m: masked_mean(x, m.tolist()), TypeError, "mask"),
    (lambda x, m: masked_mean(x, m, dim=2), ValueError, "dim"),
    (lambda x, m: masked_mean(x, m, dim=1.0), TypeError, "dim"),
    (lambda x, m: masked_mean(x, torch.zeros_like(m)), ValueError, "selects nothing"),
    (lambda x, m: masked_mean(x, ROW2_EMPTY, dim=1), ValueError, "dim=1: the mean would be NaN"),
    (lambda x, m: masked_normalize(x, m, 0.0), ValueError, "constant"),
    (lambda x, m: masked_normalize(x, m, float("nan")), ValueError, "constant"),
    (lambda x, m: masked_normalize(x, m, "tokens"), TypeError, "constant"),
    (lambda x, m: masked_normalize(x, m[None], 1.0), ValueError, "same shape"),
])
def test_masked_helpers_reject_bad_input(call, err, match):
    with pytest.raises(err, match=match):
        call(torch.randn(4, 3), torch.ones(4, 3, dtype=torch.bool))


def test_an_empty_slice_along_another_dim_is_fine():
    x = torch.randn(4, 3)
    assert masked_mean(x, ROW2_EMPTY, dim=0).shape == (3,)    # every column keeps 3 rows


# ---- entropy_from_logits: against torch.distributions and closed forms --------------------

def test_entropy_matches_categorical():
    g = torch.Generator().manual_seed(0)
    z = torch.randn(3, 4, 50, generator=g, dtype=torch.float64) * 4
    assert torch.allclose(entropy_from_logits(z), torch.distributions.Categorical(logits=z).entropy(),
                          atol=1e-12)
    assert entropy_from_logits(z).shape == (3, 4)


def test_entropy_closed_forms_and_stability():
    V = 13
    assert torch.allclose(entropy_from_logits(torch.zeros(V, dtype=torch.float64)),
                          torch.tensor(math.log(V), dtype=torch.float64))       # uniform: log V
    # two tokens with probability 1/2 each, the others banned (-inf) or vanishing (-1e4)
    z = torch.tensor([[3.0, 3.0, float("-inf"), float("-inf")], [1e4, 1e4, -1e4, 0.0]])
    assert torch.allclose(entropy_from_logits(z), torch.full((2,), math.log(2)))
    assert entropy_from_logits(torch.tensor([1e4, -1e4])).item() == 0.0       # certain: 0
    z = z.requires_grad_()
    entropy_from_logits(z).sum().backward()
    assert torch.isfinite(z.grad).all()
    half = torch.randn(2, 9).half()
    assert entropy_from_logits(half).dtype == torch.float32
    assert torch.allclose(entropy_from_logits(half), entropy_from_logits(half.float()))


def test_entropy_gradient_matches_autograd_of_the_definition():
    g = torch.Generator().manual_seed(1)
    z = torch.randn(5, 7, generator=g, dtype=torch.float64, requires_grad=True)
    p = z.softmax(-1)
    (want,) = torch.autograd.grad(-(p * p.log()).sum(), z)
    (got,) = torch.autograd.grad(entropy_from_logits(z).sum(), z)
    assert torch.allclose(got, want, atol=1e-12)


@pytest.mark.parametrize("logits, err, match", [
    (torch.zeros(3, dtype=torch.long), TypeError, "logits"),
    (torch.tensor(1.0), ValueError, "last"),
    (torch.zeros(2, 0), ValueError, "last"),
    (torch.tensor([0.0, float("nan")]), ValueError, "NaN"),
    (torch.tensor([0.0, float("inf")]), ValueError, "inf"),
    (torch.full((2, 3), float("-inf")), ValueError, "all -inf"),
    ([0.0, 1.0], TypeError, "logits"),
])
def test_entropy_rejects_bad_input(logits, err, match):
    with pytest.raises(err, match=match):
        entropy_from_logits(logits)


# Issue 31: token_logprobs names `logits` when it is the faulty argument (empty, or a
# vocabulary too small for the ids), not only `ids`.
def test_token_logprobs_names_logits_when_logits_are_wrong():
    ids = torch.tensor([[0, 1, 6], [2, 3, 4]])
    with pytest.raises(ValueError, match="`logits` is empty"):
        token_logprobs(torch.zeros(0, 3, 7), ids)
    with pytest.raises(ValueError, match=r"`ids` holds token ids in \[0, 6\], but `logits` covers 6"):
        token_logprobs(torch.zeros(2, 3, 6), ids)
    with pytest.raises(ValueError, match=r"`ids` \(batch, T\) must match the first two dims of `logits`"):
        token_logprobs(torch.zeros(2, 4, 7), ids)
    logits = torch.randn(2, 3, 7)  # oracle: torch's cross-entropy, per token
    want = -F.cross_entropy(logits[:, :-1].reshape(4, 7), ids[:, 1:].reshape(4), reduction="none")
    assert torch.allclose(token_logprobs(logits, ids), want.view(2, 2), atol=1e-6)

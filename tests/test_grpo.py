"""Tests of course_llm.grpo against hand computations, direct loops and closed forms."""
import copy
import math

import pytest
import torch

from course_llm.gpt import GPT
from course_llm.gpt_config import GPTConfig
from course_llm.grpo import (GRPOConfig, GRPOTrainer, group_advantages, grpo_loss,
                             naive_policy_gradient_loss, response_mask)
from course_llm.logprobs import masked_mean, token_logprobs
from course_llm.logprobs import token_logprobs


# ---- group_advantages ---------------------------------------------------------------------

def test_advantages_hand_computed():
    # group 1: rewards 1, 0, 0, 0: mean 1/4, unbiased variance (9/16 + 3/16) / 3 = 1/4, std 1/2
    # group 2: rewards 2, 4, 6, 8: mean 5, unbiased variance (9 + 1 + 1 + 9) / 3 = 20/3
    adv = group_advantages(torch.tensor([1.0, 0.0, 0.0, 0.0, 2.0, 4.0, 6.0, 8.0]), 4)
    s2 = math.sqrt(20 / 3)
    want = [0.75 / 0.5001, -0.25 / 0.5001, -0.25 / 0.5001, -0.25 / 0.5001,
            -3 / (s2 + 1e-4), -1 / (s2 + 1e-4), 1 / (s2 + 1e-4), 3 / (s2 + 1e-4)]
    assert adv.tolist() == pytest.approx(want, rel=1e-6)


def test_advantages_flat_group_is_zero_and_no_std():
    adv = group_advantages(torch.tensor([0.1, 0.1, 0.1, 1.0, 0.0, 0.5]), 3)
    assert adv[:3].tolist() == [0.0, 0.0, 0.0]                       # exactly 0, not rounding noise
    raw = group_advantages(torch.tensor([1.0, 0.0, 0.5, 0.5]), 2, normalize_std=False)
    assert raw.tolist() == pytest.approx([0.5, -0.5, 0.0, 0.0])


def test_advantages_match_loop():
    g = torch.Generator().manual_seed(0)
    r = torch.rand(24, generator=g)
    adv = group_advantages(r, 6)
    for i in range(4):
        grp = r[6 * i:6 * i + 6].tolist()
        mean = sum(grp) / 6
        std = math.sqrt(sum((x - mean) ** 2 for x in grp) / 5)
        for j, x in enumerate(grp):
            assert adv[6 * i + j].item() == pytest.approx((x - mean) / (std + 1e-4), rel=1e-5)


@pytest.mark.parametrize("rewards, G, err", [
    (torch.zeros(7), 2, ValueError),                                  # G does not divide
    (torch.zeros(6), 1, ValueError),                                  # G < 2: no std
    (torch.zeros(0), 2, ValueError),                                  # empty
    (torch.tensor([1.0, float("nan")]), 2, ValueError),
    (torch.tensor([1.0, float("inf")]), 2, ValueError),
    (torch.zeros(2, 2), 2, ValueError),                               # not 1-D
    (torch.zeros(4, dtype=torch.long), 2, TypeError),                 # not float
    ([1.0, 0.0], 2, TypeError),
    (torch.zeros(4), 2.0, TypeError),
])
def test_advantages_bad_input(rewards, G, err):
    with pytest.raises(err):
        group_advantages(rewards, G)


def test_advantages_bad_eps():
    with pytest.raises(ValueError, match="eps"):
        group_advantages(torch.zeros(4), 2, eps=0.0)


# ---- grpo_loss ----------------------------------------------------------------------------

def _loop_loss(lp, old, ref, adv, mask, eps, beta, aggregate):
    """The GRPO loss token by token in plain Python floats."""
    seq_terms, all_terms = [], []
    for i in range(len(lp)):
        terms = []
        for t in range(len(lp[i])):
            if not mask[i][t]:
                continue
            rho = math.exp(lp[i][t] - old[i][t])
            surrogate = min(rho * adv[i], min(max(rho, 1 - eps), 1 + eps) * adv[i])
            d = ref[i][t] - lp[i][t]
            terms.append(-(surrogate - beta * (math.exp(d) - d - 1)))
        seq_terms.append(sum(terms) / len(terms))
        all_terms += terms
    if aggregate == "sequence":
        return sum(seq_terms) / len(seq_terms)
    if aggregate == "constant":                                  # sum / T per sequence, mean
        return sum(s * n / len(mask[0]) for s, n in zip(seq_terms, map(sum, mask))) / len(mask)
    return sum(all_terms) / len(all_terms)


def _random_case(seed, B=5, T=7):
    g = torch.Generator().manual_seed(seed)
    lp = -torch.rand(B, T, generator=g, dtype=torch.float64) * 3
    old = lp + torch.randn(B, T, generator=g, dtype=torch.float64) * 0.3   # ratios beyond the clip
    ref = lp + torch.randn(B, T, generator=g, dtype=torch.float64) * 0.5
    adv = torch.randn(B, generator=g, dtype=torch.float64)
    mask = torch.arange(T) < torch.randint(1, T + 1, (B, 1), generator=g)
    return lp, old, ref, adv, mask


@pytest.mark.parametrize("aggregate", ["sequence", "token", "constant"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_loss_matches_loop(aggregate, seed):
    lp, old, ref, adv, mask = _random_case(seed)
    got = grpo_loss(lp, old, ref, adv, mask, clip_eps=0.2, beta=0.04, aggregate=aggregate)
    want = _loop_loss(lp.tolist(), old.tolist(), ref.tolist(), adv.tolist(), mask.tolist(), 0.2, 0.04,
                      aggregate)
    assert got.item() == pytest.approx(want, rel=1e-10, abs=1e-12)


def test_loss_stats():
    lp, old, ref, adv, mask = _random_case(3)
    loss, stats = grpo_loss(lp, old, ref, adv, mask, return_stats=True)
    assert loss.item() == pytest.approx(grpo_loss(lp, old, ref, adv, mask).item())
    m = mask.tolist()
    rho = [math.exp(a - b) for ra, rb, rm in zip(lp.tolist(), old.tolist(), m)
           for a, b, k in zip(ra, rb, rm) if k]
    d = [c - a for ra, rc, rm in zip(lp.tolist(), ref.tolist(), m) for a, c, k in zip(ra, rc, rm) if k]
    assert stats["ratio"] == pytest.approx(sum(rho) / len(rho))
    assert stats["clip_frac"] == pytest.approx(sum(abs(x - 1) > 0.2 for x in rho) / len(rho))
    assert stats["kl"] == pytest.approx(sum(math.exp(x) - x - 1 for x in d) / len(d))


def test_k3_is_unbiased_kl():
    g = torch.Generator().manual_seed(0)
    pi = torch.randn(8, generator=g, dtype=torch.float64).log_softmax(0)
    ref = torch.randn(8, generator=g, dtype=torch.float64).log_softmax(0)
    o = torch.multinomial(pi.exp(), 400_000, replacement=True, generator=g)
    lp, rp = pi[o][None], ref[o][None]
    mask = torch.ones_like(lp, dtype=torch.bool)
    # zero advantage: the loss is beta times the mean k3 over the sampled tokens
    got = grpo_loss(lp, lp, rp, torch.zeros(1, dtype=torch.float64), mask, beta=1.0)
    exact = torch.distributions.kl_divergence(torch.distributions.Categorical(logits=pi),
                                              torch.distributions.Categorical(logits=ref))
    assert got.item() == pytest.approx(exact.item(), rel=0.02)


def test_clipping_gradient_closed_form():
    eps = 0.2
    # tokens: ratio 1.5 (A > 0: clipped), 0.5 (A > 0: not clipped), 1.1 (inside)
    #         ratio 0.5 (A < 0: clipped), 1.5 (A < 0: not clipped), 0.9 (inside)
    ratios = torch.tensor([[1.5, 0.5, 1.1], [0.5, 1.5, 0.9]], dtype=torch.float64)
    old = torch.full((2, 3), -1.0, dtype=torch.float64)
    lp = (old + ratios.log()).requires_grad_()
    adv = torch.tensor([2.0, -3.0], dtype=torch.float64)
    mask = torch.ones(2, 3, dtype=torch.bool)
    grpo_loss(lp, old, old, adv, mask, clip_eps=eps, beta=0.0).backward()
    # d(-rho A)/d logp = -rho A, over 3 tokens per sequence and 2 sequences
    want = torch.tensor([[0.0, -0.5 * 2.0, -1.1 * 2.0], [0.0, 1.5 * 3.0, 0.9 * 3.0]],
                        dtype=torch.float64) / 6
    assert torch.allclose(lp.grad, want, atol=1e-12)


def test_padding_does_not_count():
    lp, old, ref, adv, mask = _random_case(4)
    junk = lp.clone()
    junk[~mask] = 123.0
    assert torch.allclose(grpo_loss(lp, old, ref, adv, mask), grpo_loss(junk, old, ref, adv, mask))


def test_sign_rewarded_sequence_rises():
    torch.manual_seed(0)
    model = GPT(GPTConfig.gpt2_style(vocab_size=5, max_len=8, n_layer=1, d_model=16, n_head=2))
    ids = torch.tensor([[0, 1, 2, 3], [0, 3, 3, 1], [0, 2, 4, 4], [0, 4, 1, 2]])
    rewards = torch.tensor([1.0, 0.0, 0.0, 0.0])                    # only the first is right
    mask = torch.ones(4, 3, dtype=torch.bool)

    def seq_logp():
        return token_logprobs(model(ids)[0], ids).sum(1)

    with torch.no_grad():
        before = seq_logp()
        ref = token_logprobs(model(ids)[0], ids)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    lp = token_logprobs(model(ids)[0], ids)
    grpo_loss(lp, lp.detach(), ref, group_advantages(rewards, 4), mask).backward()
    opt.step()
    with torch.no_grad():
        after = seq_logp()
    assert after[0] > before[0]
    assert (after[1:] - before[1:]).mean() < 0


@pytest.mark.parametrize("change, err, match", [
    (dict(clip_eps=0.0), ValueError, "clip_eps"),
    (dict(clip_eps=-0.1), ValueError, "clip_eps"),
    (dict(beta=-0.01), ValueError, "beta"),
    (dict(beta=float("nan")), ValueError, "beta"),
    (dict(aggregate="mean"), ValueError, "aggregate"),
    (dict(return_stats=1), TypeError, "return_stats"),
])
def test_loss_bad_options(change, err, match):
    lp, old, ref, adv, mask = _random_case(0)
    with pytest.raises(err, match=match):
        grpo_loss(lp, old, ref, adv, mask, **change)


def test_loss_bad_tensors():
    lp, old, ref, adv, mask = _random_case(0)
    with pytest.raises(ValueError, match="old_logprobs"):
        grpo_loss(lp, old[:, :-1], ref, adv, mask)
    with pytest.raises(ValueError, match="ref_logprobs"):
        grpo_loss(lp, old, ref[:-1], adv, mask)
    with pytest.raises(ValueError, match="advantages"):
        grpo_loss(lp, old, ref, adv[:-1], mask)
    with pytest.raises(ValueError, match="advantages"):
        grpo_loss(lp, old, ref, adv[:, None].expand(-1, 7), mask)   # per token: not broadcast
    with pytest.raises(ValueError, match="mask"):
        grpo_loss(lp, old, ref, adv, mask[:, :-1])
    with pytest.raises(ValueError, match="logprobs"):
        grpo_loss(lp[0], old[0], ref[0], adv[:1], mask[0])           # 1-D
    with pytest.raises(TypeError, match="logprobs"):
        grpo_loss(lp.long(), old, ref, adv, mask)
    with pytest.raises(ValueError, match="mask"):
        grpo_loss(lp, old, ref, adv, mask.float() * 2)                # not 0/1
    empty = mask.clone()
    empty[2] = False
    with pytest.raises(ValueError, match="row of `mask`"):
        grpo_loss(lp, old, ref, adv, empty)
    bad = adv.clone()
    bad[0] = float("nan")
    with pytest.raises(ValueError, match="advantages"):
        grpo_loss(lp, old, ref, bad, mask)
    bad = old.clone()
    bad[0, 0] = float("inf")
    with pytest.raises(ValueError, match="old_logprobs"):
        grpo_loss(lp, bad, ref, adv, mask)
    with pytest.raises(ValueError, match="empty"):
        grpo_loss(lp[:, :0], old[:, :0], ref[:, :0], adv, mask[:, :0])


# ---- response_mask ------------------------------------------------------------------------

def test_response_mask_loop():
    g = torch.Generator().manual_seed(0)
    r = torch.randint(0, 4, (20, 6), generator=g)
    got = response_mask(r, eos_id=3)
    for row, m in zip(r.tolist(), got.tolist()):
        end = row.index(3) + 1 if 3 in row else len(row)
        assert m == [t < end for t in range(len(row))]


def test_response_mask_bad_input():
    with pytest.raises(TypeError):
        response_mask(torch.zeros(2, 3), eos_id=1)
    with pytest.raises(ValueError):
        response_mask(torch.zeros(2, 0, dtype=torch.long), eos_id=1)
    with pytest.raises(ValueError):
        response_mask(torch.zeros(2, 3, dtype=torch.long), eos_id=-1)


# ---- trainer ------------------------------------------------------------------------------

def _tiny(seed=0):
    torch.manual_seed(seed)
    return GPT(GPTConfig.gpt2_style(vocab_size=6, max_len=10, n_layer=1, d_model=16, n_head=2)).eval()


def test_trainer_learns_to_emit_a_token():
    ref = _tiny()
    policy = copy.deepcopy(ref)
    reward = lambda prompts, responses: (responses[:, :3] == 2).float().mean(1)   # noqa: E731
    trainer = GRPOTrainer(policy, ref, reward, eos_id=5,
                          config=GRPOConfig(group_size=8, lr=1e-2, max_new_tokens=3, beta=0.0))
    g = torch.Generator().manual_seed(0)
    prompts = torch.zeros(4, 1, dtype=torch.long)
    with torch.no_grad():
        p_before = policy(prompts)[0][:, -1].softmax(-1)[:, 2].mean()
    stats = [trainer.step(prompts, g) for _ in range(15)]
    with torch.no_grad():
        p_after = policy(prompts)[0][:, -1].softmax(-1)[:, 2].mean()
    assert p_after > p_before + 0.2
    assert set(stats[0]) == {"reward", "length", "loss", "kl", "clip_frac", "ratio", "entropy"}
    assert all(0 <= s["entropy"] <= math.log(6) + 1e-6 for s in stats)    # 6 tokens: <= log 6
    assert all(s["kl"] >= 0 for s in stats)
    assert not any(p.grad is not None and p.grad.abs().sum() > 0 for p in ref.parameters())


def test_trainer_epochs_clip():
    ref = _tiny()
    reward = lambda prompts, responses: (responses[:, 0] == 2).float()   # noqa: E731
    trainer = GRPOTrainer(copy.deepcopy(ref), ref, reward, eos_id=5,
                          config=GRPOConfig(group_size=8, lr=5e-2, max_new_tokens=2, epochs=4))
    stats = trainer.step(torch.zeros(4, 1, dtype=torch.long), torch.Generator().manual_seed(1))
    assert stats["ratio"] != 1.0                                      # later epochs are off-policy


def test_trainer_bad_input():
    ref = _tiny()
    ok = lambda prompts, responses: torch.zeros(len(prompts))        # noqa: E731
    with pytest.raises(TypeError, match="policy"):
        GRPOTrainer(torch.nn.Linear(2, 2), ref, ok, eos_id=5)
    with pytest.raises(TypeError, match="reward_fn"):
        GRPOTrainer(copy.deepcopy(ref), ref, "exact match", eos_id=5)
    with pytest.raises(ValueError, match="eos_id"):
        GRPOTrainer(copy.deepcopy(ref), ref, ok, eos_id=6)
    with pytest.raises(TypeError, match="config"):
        GRPOTrainer(copy.deepcopy(ref), ref, ok, eos_id=5, config=dict(group_size=4))
    other = GPT(GPTConfig.gpt2_style(vocab_size=7, max_len=10, n_layer=1, d_model=16, n_head=2))
    with pytest.raises(ValueError, match="vocabulary"):
        GRPOTrainer(other, ref, ok, eos_id=5)
    short = lambda prompts, responses: torch.zeros(len(prompts) - 1)   # noqa: E731
    trainer = GRPOTrainer(copy.deepcopy(ref), ref, short, eos_id=5, config=GRPOConfig(group_size=2))
    with pytest.raises(ValueError, match="reward_fn"):
        trainer.step(torch.zeros(2, 1, dtype=torch.long))
    trainer = GRPOTrainer(copy.deepcopy(ref), ref, ok, eos_id=5, config=GRPOConfig(group_size=2))
    with pytest.raises(ValueError, match="prompts"):
        trainer.step(torch.full((2, 1), 9))
    nan = lambda prompts, responses: torch.full((len(prompts),), float("nan"))   # noqa: E731
    trainer = GRPOTrainer(copy.deepcopy(ref), ref, nan, eos_id=5, config=GRPOConfig(group_size=2))
    with pytest.raises(ValueError, match="NaN"):
        trainer.step(torch.zeros(2, 1, dtype=torch.long))


@pytest.mark.parametrize("change", [dict(group_size=1), dict(clip_eps=0.0), dict(beta=-1.0),
                                    dict(beta=float("nan")), dict(lr=0.0), dict(epochs=0),
                                    dict(max_new_tokens=0), dict(temperature=0.0),
                                    dict(aggregate="sum"), dict(normalize_std="yes")])
def test_config_bad_values(change):
    with pytest.raises((ValueError, TypeError)):
        GRPOConfig(**change)


# ---- naive_policy_gradient_loss (REINFORCE) -----------------------------------------------

def test_naive_pg_matches_loop():
    g = torch.Generator().manual_seed(0)
    lp = -torch.rand(4, 5, generator=g, dtype=torch.float64) * 3
    r = torch.rand(4, generator=g, dtype=torch.float64)
    b = torch.rand(4, generator=g, dtype=torch.float64)
    for baseline, bs in ((None, [0.0] * 4), (0.3, [0.3] * 4), (b, b.tolist()), (b[:, None], b.tolist())):
        got = naive_policy_gradient_loss(lp, r, baseline=baseline)
        want = [[-(r[i].item() - bs[i]) * lp[i, t].item() for t in range(5)] for i in range(4)]
        assert torch.allclose(got, torch.tensor(want, dtype=torch.float64), rtol=1e-12)
    assert torch.equal(naive_policy_gradient_loss(lp, r[:, None]), naive_policy_gradient_loss(lp, r))


def test_naive_pg_expected_gradient_is_the_exact_policy_gradient():
    # enumerate every answer a of a softmax policy: E_a[(r_a - b) grad log pi_a] = grad E[r]
    g = torch.Generator().manual_seed(1)
    z = torch.randn(7, generator=g, dtype=torch.float64).requires_grad_()
    r = torch.rand(7, generator=g, dtype=torch.float64) + 5
    exact = torch.autograd.grad((z.softmax(0) * r).sum(), z)[0]     # autograd of E[r]
    for baseline in (None, 4.0, float(r.mean())):
        logp = z.log_softmax(0)[:, None]                              # (7 answers, 1 token)
        per_answer = naive_policy_gradient_loss(logp, r, baseline=baseline)[:, 0]
        expected = (z.softmax(0).detach() * per_answer).sum()         # weights pi_a, constants
        assert torch.allclose(-torch.autograd.grad(expected, z)[0], exact, atol=1e-12)


def test_naive_pg_gradient_closed_form_and_constants():
    lp = torch.tensor([[-1.0, -2.0], [-0.5, -3.0]], requires_grad=True)
    r = torch.tensor([2.0, -1.0], requires_grad=True)
    naive_policy_gradient_loss(lp, r, baseline=0.5).sum().backward()
    assert torch.equal(lp.grad, torch.tensor([[-1.5, -1.5], [1.5, 1.5]]))    # -(r - b)
    assert r.grad is None                                                    # rewards detached


def test_grpo_gradient_is_reinforce_with_the_advantages():
    lp, _, _, adv, mask = _random_case(5)
    lp.requires_grad_()
    g1 = torch.autograd.grad(grpo_loss(lp, lp.detach(), lp.detach(), adv, mask, beta=0.0), lp)[0]
    pg = masked_mean(naive_policy_gradient_loss(lp, adv), mask, dim=1).mean()
    g2 = torch.autograd.grad(pg, lp)[0]
    assert torch.allclose(g1, g2, atol=1e-12)


@pytest.mark.parametrize("kwargs, err, match", [
    (dict(logprobs=torch.zeros(3)), ValueError, "logprobs"),                       # 1-D
    (dict(logprobs=torch.zeros(2, 3, dtype=torch.long)), TypeError, "logprobs"),
    (dict(logprobs=torch.full((2, 3), float("nan"))), ValueError, "logprobs"),
    (dict(rewards=torch.zeros(3)), ValueError, "rewards"),                          # wrong B
    (dict(rewards=torch.zeros(2, 3)), ValueError, "rewards"),                       # per token
    (dict(rewards=torch.zeros(2, dtype=torch.long)), TypeError, "rewards"),
    (dict(rewards=[1.0, 0.0]), TypeError, "rewards"),
    (dict(baseline=torch.zeros(3)), ValueError, "baseline"),
    (dict(baseline="mean"), TypeError, "baseline"),
    (dict(baseline=float("inf")), ValueError, "baseline"),
])
def test_naive_pg_bad_input(kwargs, err, match):
    args = dict(logprobs=torch.zeros(2, 3), rewards=torch.zeros(2), baseline=None) | kwargs
    with pytest.raises(err, match=match):
        naive_policy_gradient_loss(args["logprobs"], args["rewards"], baseline=args["baseline"])

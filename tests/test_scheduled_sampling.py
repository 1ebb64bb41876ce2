"""Scheduled sampling (`course_llm.rnn.scheduled_sampling_forward`) against oracles:
teacher forcing at epsilon = 1, a model with a known output distribution at epsilon = 0,
binomial bounds on the coins, and teacher forcing on the inputs actually read."""

import math

import pytest
import torch
import torch.nn.functional as F

from course_llm.rnn import RNNLM, lm_loss, scheduled_sampling_forward

V = 7


def make_lm(seed=0, num_layers=1):
    torch.manual_seed(seed)
    return RNNLM(vocab_size=V, d_embed=4, hidden_size=8, num_layers=num_layers)


def fixed_distribution_lm(probs):
    """An RNNLM whose next-token distribution is ``probs`` whatever it reads."""
    lm = make_lm()
    with torch.no_grad():
        lm.U.weight.zero_()
        lm.U.bias.copy_(torch.log(probs))
    return lm


@pytest.mark.parametrize("num_layers", [1, 2])
def test_epsilon_one_is_teacher_forcing(num_layers):
    lm = make_lm(num_layers=num_layers)
    x, y = torch.randint(0, V, (4, 12)), torch.randint(0, V, (4, 12))
    logits, inputs = scheduled_sampling_forward(lm, x, 1.0, torch.Generator().manual_seed(0))
    assert torch.equal(inputs, x)
    tf_logits = lm(x)[0]
    assert torch.allclose(logits, tf_logits, atol=1e-6)
    oracle = F.cross_entropy(tf_logits.reshape(-1, V), y.reshape(-1))
    assert math.isclose(lm_loss(logits, y).item(), oracle.item(), rel_tol=1e-6)


def test_epsilon_zero_feeds_the_models_own_tokens():
    one_hot = torch.full((V,), 1e-12)
    one_hot[3] = 1.0  # the model always predicts token 3
    lm = fixed_distribution_lm(one_hot / one_hot.sum())
    x = torch.randint(4, V, (5, 9))  # never 3
    logits, inputs = scheduled_sampling_forward(lm, x, 0.0)
    expected = torch.full_like(x, 3)
    expected[:, 0] = x[:, 0]  # the first input is always the true one
    assert torch.equal(inputs, expected)
    assert torch.allclose(logits, lm(expected)[0], atol=1e-6)


def test_coins_follow_epsilon():
    one_hot = torch.full((V,), 1e-12)
    one_hot[3] = 1.0
    lm = fixed_distribution_lm(one_hot / one_hot.sum())
    x = torch.randint(4, V, (100, 41))
    eps = 0.3
    with torch.no_grad():
        _, inputs = scheduled_sampling_forward(lm, x, eps, torch.Generator().manual_seed(1))
    true_fed = (inputs[:, 1:] == x[:, 1:]).float()
    n = true_fed.numel()
    assert abs(true_fed.mean().item() - eps) < 5 * math.sqrt(eps * (1 - eps) / n)


def test_draws_follow_the_models_distribution():
    probs = torch.tensor([0.4, 0.3, 0.1, 0.1, 0.05, 0.03, 0.02])
    lm = fixed_distribution_lm(probs)
    x = torch.zeros(200, 51, dtype=torch.long)
    with torch.no_grad():
        _, inputs = scheduled_sampling_forward(lm, x, 0.0, torch.Generator().manual_seed(2))
    draws = inputs[:, 1:].flatten()
    freq = torch.bincount(draws, minlength=V).float() / len(draws)
    tol = 5 * torch.sqrt(probs * (1 - probs) / len(draws))
    assert torch.all((freq - probs).abs() < tol)


def test_gradient_is_teacher_forcing_on_the_inputs_read():
    lm = make_lm()
    x, y = torch.randint(0, V, (3, 10)), torch.randint(0, V, (3, 10))
    logits, inputs = scheduled_sampling_forward(lm, x, 0.5, torch.Generator().manual_seed(3))
    grads = torch.autograd.grad(lm_loss(logits, y), list(lm.parameters()))
    oracle = torch.autograd.grad(lm_loss(lm(inputs)[0], y), list(lm.parameters()))
    for g, o in zip(grads, oracle):
        assert torch.allclose(g, o, atol=1e-6)


def test_seeded_runs_reproduce():
    lm = make_lm()
    x = torch.randint(0, V, (3, 10))
    a = scheduled_sampling_forward(lm, x, 0.5, torch.Generator().manual_seed(4))
    b = scheduled_sampling_forward(lm, x, 0.5, torch.Generator().manual_seed(4))
    assert torch.equal(a[1], b[1]) and torch.equal(a[0], b[0])


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(model=torch.nn.LSTM(3, 4)), TypeError, "model"),
        (dict(x=torch.randint(0, V, (6,))), ValueError, "x"),
        (dict(x=torch.full((2, 3), V)), ValueError, "x"),
        (dict(x=torch.full((2, 3), -1)), ValueError, "x"),
        (dict(x=torch.rand(2, 3)), (TypeError, ValueError), "x"),
        (dict(x=torch.zeros(0, 3, dtype=torch.long)), ValueError, "x"),
        (dict(x=torch.zeros(2, 0, dtype=torch.long)), ValueError, "x"),
        (dict(epsilon=float("nan")), ValueError, "epsilon"),
        (dict(epsilon=float("inf")), ValueError, "epsilon"),
        (dict(epsilon=-0.1), ValueError, "epsilon"),
        (dict(epsilon=1.5), ValueError, "epsilon"),
        (dict(epsilon="0.5"), TypeError, "epsilon"),
        (dict(generator=0), TypeError, "generator"),
    ],
)
def test_bad_inputs_are_named(kwargs, error, match):
    args = dict(model=make_lm(), x=torch.randint(0, V, (2, 3)), epsilon=0.5, generator=None)
    args.update(kwargs)
    with pytest.raises(error, match=match):
        scheduled_sampling_forward(**args)

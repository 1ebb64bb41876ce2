"""Tests of course_llm.optim's `fit`: the steps are those of PyTorch's own AdamW run by hand
(the oracle), clipping matches `torch.nn.utils.clip_grad_norm_`, and a non-finite loss or
gradient stops the loop before the weights change (issue 31)."""
import math

import pytest
import torch
import torch.nn as nn

from course_llm.optim import NonFiniteLossError, adamw, fit


def _problem(seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(32, 3, generator=g)
    return X, X @ torch.tensor([[1.0], [-2.0], [0.5]])


def _mse(m, b):
    return ((m(b[0]) - b[1]) ** 2).mean()


def _by_hand(model, batch, steps, lr, max_grad_norm=None, fused=True):
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0, fused=fused)
    for _ in range(steps):
        opt.zero_grad()
        _mse(model, batch).backward()
        if max_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
        opt.step()


@pytest.mark.parametrize("max_grad_norm", [None, 0.05])
def test_fit_steps_with_the_fused_adamw(max_grad_norm):
    """Issue 32 item 5: fit steps with `adamw` (PyTorch's fused kernel where it exists)."""
    batch = _problem()
    torch.manual_seed(0)
    a = nn.Linear(3, 1)
    b, c = nn.Linear(3, 1), nn.Linear(3, 1)
    b.load_state_dict(a.state_dict())
    c.load_state_dict(a.state_dict())
    fit(a, [batch], _mse, steps=6, lr=0.01, max_grad_norm=max_grad_norm)
    fused = adamw(nn.Linear(1, 1).parameters()).defaults["fused"]
    _by_hand(b, batch, 6, 0.01, max_grad_norm, fused=fused)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    _by_hand(c, batch, 6, 0.01, max_grad_norm, fused=None)         # the default loop: same
    assert all(torch.allclose(p, q, rtol=1e-5, atol=1e-6)          # up to float32 rounding
               for p, q in zip(a.parameters(), c.parameters()))


def test_max_grad_norm_is_the_argument_and_clip_is_gone():
    batch = _problem()
    lin = nn.Linear(3, 1)
    with pytest.raises(TypeError):
        fit(lin, [batch], _mse, steps=1, lr=0.01, clip=1.0)
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="max_grad_norm"):
            fit(lin, [batch], _mse, steps=1, lr=0.01, max_grad_norm=bad)
    with pytest.raises(TypeError, match="max_grad_norm"):
        fit(lin, [batch], _mse, steps=1, lr=0.01, max_grad_norm="1")


@pytest.mark.parametrize("poison", ["nan loss", "inf loss", "nan input at step 3"])
def test_non_finite_loss_raises_before_the_weights_change(poison):
    batch = _problem()
    torch.manual_seed(0)
    lin = nn.Linear(3, 1)
    calls = []

    def loss_fn(m, b):
        calls.append(1)
        if poison == "nan loss":
            return _mse(m, b) * float("nan")
        if poison == "inf loss":
            return _mse(m, b) + float("inf")
        x = b[0].clone()
        if len(calls) == 3:
            x[0, 0] = float("nan")
        return _mse(m, (x, b[1]))

    good_steps = 2 if poison == "nan input at step 3" else 0
    twin = nn.Linear(3, 1)
    twin.load_state_dict(lin.state_dict())
    if good_steps:
        fit(twin, [batch], _mse, steps=good_steps, lr=0.01)  # what the good steps give
    with pytest.raises(NonFiniteLossError, match=rf"step {good_steps}\b"):
        fit(lin, [batch], loss_fn, steps=5, lr=0.01)
    assert all(p.isfinite().all() for p in lin.parameters())
    assert all(torch.equal(p, q) for p, q in zip(lin.parameters(), twin.parameters()))


def test_non_finite_gradient_with_finite_loss_raises():
    lin = nn.Linear(1, 1)

    def loss_fn(m, b):       # sqrt at 0: finite value, infinite gradient
        return torch.sqrt((m.weight * 0).sum())

    with pytest.raises(NonFiniteLossError, match="gradient norm"):
        fit(lin, [torch.zeros(1)], loss_fn, steps=2, lr=0.01)
    assert all(p.isfinite().all() for p in lin.parameters())


def test_the_error_is_a_runtime_error_and_the_model_mode_is_restored():
    lin = nn.Linear(1, 1).eval()
    with pytest.raises(RuntimeError):
        fit(lin, [torch.zeros(1)], lambda m, b: m.weight.sum() * math.nan, steps=1, lr=0.1)
    assert not lin.training


@pytest.mark.parametrize("betas, error", [((), TypeError), (None, TypeError), ("ab", TypeError),
                                          ((0.9, 1.0), ValueError), ((float("nan"), 0.9), ValueError),
                                          ((0.9, "0.9"), TypeError)])
def test_betas_are_checked_by_name(betas, error):
    """Found by benchmarks/probe_bad_input.py: () gave a bare IndexError."""
    with pytest.raises(error, match="betas"):
        fit(nn.Linear(3, 1), [_problem()], _mse, steps=1, lr=0.01, betas=betas)


@pytest.mark.parametrize("kwargs, named", [
    (dict(max_steps=0), ("max_steps", "warmup_steps")),      # warm-up longer than the run
    (dict(warmup_steps=11), ("warmup_steps", "max_steps")),
    (dict(max_lr=0.0), ("max_lr", "min_lr")),                # floor above the peak
    (dict(min_lr=2.0), ("min_lr", "max_lr")),
    (dict(max_steps=-1), ("max_steps",)),
    (dict(max_lr=float("nan")), ("max_lr",)),
])
def test_cosine_schedule_names_the_argument_at_fault(kwargs, named):
    """Issue 31: the message names the argument that is wrong; a conflict names both."""
    from course_llm.optim import cosine_schedule
    args = dict(step=0, max_steps=10, warmup_steps=2, max_lr=1.0, min_lr=0.1) | kwargs
    with pytest.raises(ValueError) as e:
        cosine_schedule(**args)
    for name in named:
        assert f"`{name}`" in str(e.value), str(e.value)


def test_fit_names_both_arguments_in_a_conflict():
    batch = _problem()
    with pytest.raises(ValueError, match=r"`warmup_steps` \(5\) must be <= `steps` \(2\)"):
        fit(nn.Linear(3, 1), [batch], _mse, steps=2, lr=0.1, warmup_steps=5)
    with pytest.raises(ValueError, match=r"`min_lr` \(0.5\) must be <= `lr` \(0.1\)"):
        fit(nn.Linear(3, 1), [batch], _mse, steps=2, lr=0.1, min_lr=0.5)

"""Tests of course_llm.flash against torch.nn.functional.scaled_dot_product_attention and autograd."""

import math

import pytest
import torch
import torch.nn.functional as F

from course_llm.flash import (
    flash_attention,
    flash_attention_backward,
    peak_tensor_bytes,
    sliding_window_mask,
)


def _mask(T, S, window=None):
    """Bottom-right causal (and window) mask, built independently of course_llm.flash."""
    keep = torch.zeros(T, S, dtype=torch.bool)
    for i in range(T):
        for j in range(S):
            p = S - T + i
            keep[i, j] = j <= p and (window is None or p - j < window)
    return keep


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-5), (torch.float64, 1e-12)])
@pytest.mark.parametrize("T,S", [(1, 1), (5, 5), (63, 65), (65, 63), (1, 129), (70, 200), (128, 128)])
def test_equals_sdpa(dtype, tol, T, S):
    g = torch.Generator().manual_seed(T * 1000 + S)
    q = torch.randn(2, 3, T, 16, generator=g, dtype=dtype)
    k = torch.randn(2, 3, S, 16, generator=g, dtype=dtype)
    v = torch.randn(2, 3, S, 8, generator=g, dtype=dtype)
    want = F.scaled_dot_product_attention(q, k, v)
    assert (flash_attention(q, k, v, block_q=16, block_k=32) - want).abs().max() < tol
    if T <= S:
        want = F.scaled_dot_product_attention(q, k, v, attn_mask=_mask(T, S))
        got = flash_attention(q, k, v, causal=True, block_q=16, block_k=32)
        assert (got - want).abs().max() < tol


@pytest.mark.parametrize("T,S,window", [(40, 40, 1), (40, 40, 7), (10, 90, 33), (100, 100, 64), (5, 5, 99)])
def test_sliding_window_equals_sdpa(T, S, window):
    q, k, v = torch.randn(3, 1, 2, max(T, S), 8, dtype=torch.float64)
    q = q[:, :, :T].contiguous()
    k, v = k[:, :, :S], v[:, :, :S]
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=_mask(T, S, window))
    got = flash_attention(q, k, v, causal=True, window=window, block_q=8, block_k=16)
    assert (got - want).abs().max() < 1e-12


def test_sliding_window_mask_brute_force():
    assert torch.equal(sliding_window_mask(9, 3), _mask(9, 9, 3))
    assert torch.equal(sliding_window_mask(4, 10), torch.ones(4, 4, dtype=torch.bool).tril())


def test_scale_and_large_scores_are_stable():
    q, k, v = torch.randn(3, 1, 1, 20, 4)
    want = F.scaled_dot_product_attention(q * 100, k, v, scale=0.7)
    got = flash_attention(q * 100, k, v, scale=0.7, block_k=3)
    assert torch.isfinite(got).all() and (got - want).abs().max() < 1e-4


def test_gradients_match_sdpa():
    q, k, v = (torch.randn(1, 2, 9, 4, dtype=torch.float64, requires_grad=True) for _ in range(3))
    flash_attention(q, k, v, causal=True, block_q=4, block_k=4).sum().backward()
    grads = [t.grad.clone() for t in (q, k, v)]
    for t in (q, k, v):
        t.grad = None
    F.scaled_dot_product_attention(q, k, v, is_causal=True).sum().backward()
    for got, t in zip(grads, (q, k, v)):
        assert torch.allclose(got, t.grad, atol=1e-12)


def test_peak_tensor_bytes_counts_the_score_matrix():
    q, k, v = torch.randn(3, 1, 1, 512, 32)
    _, naive = peak_tensor_bytes(lambda: torch.softmax(q @ k.transpose(-2, -1), -1) @ v)
    _, tiled = peak_tensor_bytes(flash_attention, q, k, v)
    assert naive >= 512 * 512 * 4 and tiled < 512 * 512 * 4 / 2
    assert peak_tensor_bytes(torch.zeros, 10)[1] == 40


@pytest.mark.parametrize("kwargs,err,match", [
    (dict(block_q=0), ValueError, "block_q"),
    (dict(block_k=2.5), TypeError, "block_k"),
    (dict(block_k=True), TypeError, "block_k"),
    (dict(scale=0.0), ValueError, "scale"),
    (dict(scale=float("nan")), ValueError, "scale"),
    (dict(window=4), ValueError, "causal=True"),
    (dict(causal=True, window=0), ValueError, "window"),
    (dict(causal=1), TypeError, "causal"),
])
def test_bad_options(kwargs, err, match):
    q, k, v = torch.randn(3, 1, 1, 4, 8)
    with pytest.raises(err, match=match):
        flash_attention(q, k, v, **kwargs)


def test_bad_tensors():
    q = torch.randn(1, 2, 4, 8)
    with pytest.raises(ValueError, match="`q` must have 4 dimensions"):
        flash_attention(q[0], q, q)
    with pytest.raises(TypeError, match="`k` must have a float dtype"):
        flash_attention(q, q.long(), q)
    with pytest.raises(TypeError, match="share one dtype"):
        flash_attention(q, q.double(), q.double())
    with pytest.raises(ValueError, match=r"k \(B, H, S, d\)"):
        flash_attention(q, torch.randn(1, 2, 4, 6), torch.randn(1, 2, 4, 6))
    with pytest.raises(ValueError, match=r"v \(B, H, S, d_v\)"):
        flash_attention(q, q, torch.randn(1, 2, 5, 8))
    with pytest.raises(ValueError, match="empty"):
        flash_attention(q[:, :, :0], q, q)
    with pytest.raises(ValueError, match="S >= T"):
        flash_attention(q, q[:, :, :2], q[:, :, :2], causal=True)
    with pytest.raises(TypeError, match="torch.Tensor"):
        flash_attention(q.tolist(), q, q)
    with pytest.raises(TypeError, match="T"):
        sliding_window_mask(4.0, 2)
    with pytest.raises(ValueError, match="window"):
        sliding_window_mask(4, -1)
    with pytest.raises(TypeError, match="fn"):
        peak_tensor_bytes(3)


@pytest.mark.parametrize("name", ["q", "k", "v"])
@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_non_finite_tensors_are_refused(name, bad):
    x = {n: torch.randn(1, 2, 4, 8) for n in "qkv"}
    x[name][0, 1, 2, 3] = bad
    with pytest.raises(ValueError, match=f"`{name}` holds NaN or inf"):
        flash_attention(x["q"], x["k"], x["v"])


def _dense(q, k, v, causal=False, window=None, scale=None):
    """Dense attention and its row log-sum-exp (the autograd oracle)."""
    scale = 1 / math.sqrt(q.size(-1)) if scale is None else scale
    s = q @ k.transpose(-2, -1) * scale
    if causal:
        s = s.masked_fill(~_mask(q.size(2), k.size(2), window), float("-inf"))
    return torch.softmax(s, -1) @ v, torch.logsumexp(s, -1)


def _grads(fn, q, k, v, dO, dL):
    q, k, v = (t.clone().requires_grad_() for t in (q, k, v))
    out, lse = fn(q, k, v)
    torch.autograd.backward((out, lse), (dO, dL))
    return q.grad, k.grad, v.grad


CASES = [  # T, S, causal, window: partial tiles (blocks 16 x 32), T != S, masks
    (37, 37, False, None),
    (37, 90, False, None),
    (90, 37, False, None),
    (1, 1, False, None),
    (48, 64, True, None),
    (23, 70, True, None),
    (70, 70, True, 9),
    (5, 77, True, 20),
    (33, 33, True, 1),
]


@pytest.mark.parametrize("T,S,causal,window", CASES)
def test_gradients_equal_autograd_through_dense_attention(T, S, causal, window):
    g = torch.Generator().manual_seed(7 * T + S)
    q = torch.randn(2, 3, T, 16, generator=g, dtype=torch.float64)
    k = torch.randn(2, 3, S, 16, generator=g, dtype=torch.float64)
    v = torch.randn(2, 3, S, 8, generator=g, dtype=torch.float64)
    dO = torch.randn(2, 3, T, 8, generator=g, dtype=torch.float64)
    dL = torch.randn(2, 3, T, generator=g, dtype=torch.float64)
    want = _grads(lambda *x: _dense(*x, causal, window), q, k, v, dO, dL)
    opts = dict(causal=causal, window=window, block_q=16, block_k=32)
    got = _grads(lambda *x: flash_attention(*x, **opts, return_lse=True), q, k, v, dO, dL)
    for a, b in zip(got, want):
        assert a.dtype == torch.float64 and (a - b).abs().max() < 1e-10
    # the public backward, called directly (no gradient into lse)
    out, lse = flash_attention(q, k, v, **opts, return_lse=True)
    want = _grads(lambda *x: _dense(*x, causal, window), q, k, v, dO, torch.zeros_like(dL))
    got = flash_attention_backward(q, k, v, out, lse, dO, **opts)
    for a, b in zip(got, want):
        assert (a - b).abs().max() < 1e-10


@pytest.mark.parametrize("T,S,causal,window", CASES)
@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-5), (torch.float64, 1e-12)])
def test_lse_equals_logsumexp(T, S, causal, window, dtype, tol):
    g = torch.Generator().manual_seed(T + 3 * S)
    q, k = torch.randn(1, 2, T, 8, generator=g), torch.randn(1, 2, S, 8, generator=g)
    v = torch.randn(1, 2, S, 4, generator=g)
    q, k, v = q.to(dtype), k.to(dtype), v.to(dtype)
    out, lse = flash_attention(
        q, k, v, causal=causal, window=window, block_q=16, block_k=32, scale=0.3,
        return_lse=True,
    )
    s = q @ k.transpose(-2, -1) * 0.3
    if causal:
        s = s.masked_fill(~_mask(T, S, window), float("-inf"))
    assert lse.shape == (1, 2, T) and lse.dtype == dtype
    assert (lse - torch.logsumexp(s, -1)).abs().max() < tol
    assert torch.equal(out, flash_attention(q, k, v, causal=causal, window=window,
                                            block_q=16, block_k=32, scale=0.3))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_keeps_float32_statistics(dtype):
    q, k, v = torch.randn(3, 1, 2, 40, 8)
    out, lse = flash_attention(q.to(dtype), k.to(dtype), v.to(dtype), causal=True,
                               block_q=16, block_k=16, return_lse=True)
    assert out.dtype == dtype and lse.dtype == torch.float32
    want, want_lse = _dense(q.double(), k.double(), v.double(), causal=True)
    assert (lse - want_lse).abs().max() < 0.05 and (out - want).abs().max() < 0.05
    x = [t.to(dtype).requires_grad_() for t in (q, k, v)]
    flash_attention(*x, causal=True, block_q=16, block_k=16).sum().backward()
    assert all(t.grad.dtype == dtype and torch.isfinite(t.grad).all() for t in x)


def test_saves_only_q_k_v_out_and_lse():
    saved = []

    def pack(t):
        saved.append(tuple(t.shape))
        return t

    q, k, v = (torch.randn(1, 2, 200, 16, requires_grad=True) for _ in range(3))
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        flash_attention(q, k, v, causal=True, return_lse=True)
    assert sorted(saved) == [(1, 2, 200)] + [(1, 2, 200, 16)] * 4


def test_training_memory_is_a_fraction_of_dense():
    q, k, v, dO = torch.randn(4, 1, 1, 512, 32)

    def step(attn):
        with torch.enable_grad():
            x = [t.detach().requires_grad_() for t in (q, k, v)]
            attn(*x).backward(dO)

    _, dense = peak_tensor_bytes(step, lambda *x: _dense(*x)[0])
    _, flash = peak_tensor_bytes(step, flash_attention)
    assert dense >= 3 * 512 * 512 * 4  # P, dP and dS at once
    assert flash < dense / 4


def test_unused_outputs_and_double_backward():
    q, k, v = (torch.randn(1, 1, 9, 4, dtype=torch.float64, requires_grad=True)
               for _ in range(3))
    _, lse = flash_attention(q, k, v, block_q=4, block_k=4, return_lse=True)
    (gq,) = torch.autograd.grad(lse.sum(), q)  # only lse used: grad_out is None
    (want,) = torch.autograd.grad(_dense(q, k, v)[1].sum(), q)
    assert torch.allclose(gq, want, atol=1e-12)
    out = flash_attention(q, k, v)
    w = torch.randn_like(out, requires_grad=True)
    (gq,) = torch.autograd.grad(out, q, w, create_graph=True)
    with pytest.raises(RuntimeError, match="twice"):  # no double backward
        gq.sum().backward()


def test_backward_bad_inputs():
    q = torch.randn(1, 2, 4, 8)
    out, lse = flash_attention(q, q, q, return_lse=True)
    with pytest.raises(ValueError, match="`out` must have shape"):
        flash_attention_backward(q, q, q, out[:, :, :3], lse, out)
    with pytest.raises(ValueError, match="`grad_out` must have shape"):
        flash_attention_backward(q, q, q, out, lse, out[..., :3])
    with pytest.raises(ValueError, match="`lse` must have shape"):
        flash_attention_backward(q, q, q, out, lse[..., None], out)
    with pytest.raises(TypeError, match="`lse` must have a float dtype"):
        flash_attention_backward(q, q, q, out, lse.long(), out)
    with pytest.raises(ValueError, match="`grad_lse` must have shape"):
        flash_attention_backward(q, q, q, out, lse, out, grad_lse=lse[0])
    with pytest.raises(ValueError, match="`grad_out` holds NaN"):
        flash_attention_backward(q, q, q, out, lse, out * float("nan"))
    with pytest.raises(TypeError, match="`out` must be a torch.Tensor"):
        flash_attention_backward(q, q, q, None, lse, out)
    with pytest.raises(ValueError, match="block_k"):
        flash_attention_backward(q, q, q, out, lse, out, block_k=0)
    with pytest.raises(ValueError, match="causal=True"):
        flash_attention_backward(q, q, q, out, lse, out, window=2)
    with pytest.raises(TypeError, match="return_lse"):
        flash_attention(q, q, q, return_lse=1)

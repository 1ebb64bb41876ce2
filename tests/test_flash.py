"""Tests of course_llm.flash against torch.nn.functional.scaled_dot_product_attention."""

import pytest
import torch
import torch.nn.functional as F

from course_llm.flash import flash_attention, peak_tensor_bytes, sliding_window_mask


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

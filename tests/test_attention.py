"""course_llm.attention against independent oracles: PyTorch's fused scaled_dot_product_attention
and torch.nn.MultiheadAttention with copied weights."""

import itertools

import pytest
import torch
from concat_cache import ConcatCache
import torch.nn as nn
import torch.nn.functional as F

from course_llm.kv_cache import CrossCache
from course_llm.attention import MultiHeadAttention, explicit_attention, repeat_kv, scaled_dot_product_attention
from course_llm.masks import causal_mask, padding_mask

torch.set_num_threads(1)

TOL = {torch.float32: 1e-5, torch.float64: 1e-12}


def _qkv(shape_q, shape_k, d_v, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(*shape_q, generator=g, dtype=dtype)
    k = torch.randn(*shape_k, generator=g, dtype=dtype)
    v = torch.randn(*shape_k[:-1], d_v, generator=g, dtype=dtype)
    return q, k, v


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("batch,heads,L,S", [(1, 1, 1, 1), (2, 3, 5, 5), (3, 2, 4, 9), (1, 4, 17, 17), (2, 1, 7, 3)])
def test_equals_torch_sdpa_unmasked(dtype, batch, heads, L, S):
    q, k, v = _qkv((batch, heads, L, 8), (batch, heads, S, 8), 6, dtype)
    want = F.scaled_dot_product_attention(q, k, v)
    for fn in (lambda *a: explicit_attention(*a)[0], scaled_dot_product_attention):
        assert torch.allclose(fn(q, k, v), want, atol=TOL[dtype])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("batch,heads,L", [(1, 1, 1), (2, 3, 6), (1, 2, 33)])
def test_equals_torch_sdpa_causal(dtype, batch, heads, L):
    q, k, v = _qkv((batch, heads, L, 4), (batch, heads, L, 4), 4, dtype, seed=1)
    want = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    got, w = explicit_attention(q, k, v, is_causal=True)
    assert torch.allclose(got, want, atol=TOL[dtype])
    assert torch.allclose(scaled_dot_product_attention(q, k, v, is_causal=True), want, atol=TOL[dtype])
    assert (w.triu(1) == 0).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_equals_torch_sdpa_padding_and_float_masks(dtype):
    q, k, v = _qkv((3, 2, 5, 8), (3, 2, 7, 8), 8, dtype, seed=2)
    lengths = torch.tensor([7, 4, 1])
    am = (torch.arange(7)[None] < lengths[:, None]).long()        # HF convention: 1 = token
    keep = padding_mask(am)
    assert keep.shape == (3, 1, 1, 7)
    bias = torch.randn(3, 2, 5, 7, dtype=dtype, generator=torch.Generator().manual_seed(3))
    for mask in (keep, bias, keep.expand(3, 2, 5, 7)):
        want = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        assert torch.allclose(explicit_attention(q, k, v, mask=mask)[0], want, atol=TOL[dtype])
        assert torch.allclose(scaled_dot_product_attention(q, k, v, mask=mask), want, atol=TOL[dtype])


def test_causal_plus_padding_equals_torch_with_combined_mask():
    q, k, v = _qkv((2, 2, 6, 4), (2, 2, 6, 4), 4, torch.float64, seed=4)
    keep = padding_mask(torch.tensor([[1, 1, 1, 1, 1, 1], [0, 0, 1, 1, 1, 1]]))   # left padding
    combined = keep & torch.ones(6, 6, dtype=torch.bool).tril()
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=combined)   # fully masked rows -> 0
    for got in (explicit_attention(q, k, v, mask=keep, is_causal=True)[0],
                scaled_dot_product_attention(q, k, v, mask=keep, is_causal=True)):
        assert torch.allclose(got, want, atol=1e-12)
        assert torch.isfinite(got).all()


def test_fully_masked_rows_give_zero_and_finite_gradients():
    q, k, v = (t.requires_grad_() for t in _qkv((1, 1, 3, 4), (1, 1, 3, 4), 4, torch.float64))
    mask = torch.tensor([[False, False, False], [True, False, False], [True, True, True]])
    out, w = explicit_attention(q, k, v, mask=mask)
    assert (out[0, 0, 0] == 0).all() and (w[0, 0, 0] == 0).all()
    out.sum().backward()
    assert all(torch.isfinite(t.grad).all() for t in (q, k, v))


def test_causal_mask_with_fewer_queries_is_bottom_right_aligned():
    # the last 2 of 5 positions as queries equals the last 2 rows of the full causal computation
    q, k, v = _qkv((1, 2, 5, 4), (1, 2, 5, 4), 4, torch.float64, seed=5)
    full = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    for fn in (lambda *a, **kw: explicit_attention(*a, **kw)[0], scaled_dot_product_attention):
        assert torch.allclose(fn(q[:, :, 3:], k, v, is_causal=True), full[:, :, 3:], atol=1e-12)
        assert torch.allclose(fn(q[:, :, 4:], k, v, is_causal=True), full[:, :, 4:], atol=1e-12)
    assert causal_mask(2, 4).tolist() == [[True, True, True, False], [True, True, True, True]]


def test_grouped_query_attention_equals_repeated_heads():
    q, k, v = _qkv((2, 6, 5, 4), (2, 2, 5, 4), 4, torch.float64, seed=6)
    k_full = k.repeat_interleave(3, dim=1)                      # query head h reads kv head h // 3
    v_full = v.repeat_interleave(3, dim=1)
    want = F.scaled_dot_product_attention(q, k_full, v_full, is_causal=True)
    assert torch.allclose(scaled_dot_product_attention(q, k, v, is_causal=True), want, atol=1e-12)
    assert torch.allclose(explicit_attention(q, k, v, is_causal=True)[0], want, atol=1e-12)
    assert torch.equal(repeat_kv(k, 3), k_full)


def test_scale_argument_matches_torch():
    q, k, v = _qkv((2, 2, 5, 8), (2, 2, 5, 8), 8, torch.float64, seed=7)
    want = F.scaled_dot_product_attention(q, k, v, scale=1.0)
    assert torch.allclose(explicit_attention(q, k, v, scale=1.0)[0], want, atol=1e-12)
    assert torch.allclose(scaled_dot_product_attention(q, k, v, scale=1.0), want, atol=1e-12)


def _copy_torch_mha(ours, theirs):
    with torch.no_grad():
        for lin, w, b in zip((ours.q_proj, ours.k_proj, ours.v_proj), theirs.in_proj_weight.chunk(3),
                             theirs.in_proj_bias.chunk(3)):
            lin.weight.copy_(w)
            lin.bias.copy_(b)
        ours.out_proj.weight.copy_(theirs.out_proj.weight)
        ours.out_proj.bias.copy_(theirs.out_proj.bias)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("causal,padded", list(itertools.product([False, True], [False, True])))
def test_multihead_equals_torch_multiheadattention(dtype, causal, padded):
    torch.manual_seed(0)
    d, H, L = 24, 4, 7
    theirs = nn.MultiheadAttention(d, H, batch_first=True).to(dtype).eval()
    ours = MultiHeadAttention(d, H, causal=causal).to(dtype).eval()
    _copy_torch_mha(ours, theirs)
    x = torch.randn(3, L, d, dtype=dtype)
    am = torch.ones(3, L, dtype=torch.long)
    am[1, 5:] = 0
    am[2, 2:] = 0
    kw = {"attn_mask": ~causal_mask(L)} if causal else {}
    if padded:
        kw["key_padding_mask"] = am == 0                      # torch: True = ignore
    want, want_w = theirs(x, x, x, average_attn_weights=False, **kw)
    mask = padding_mask(am) if padded else None
    got, got_w = ours(x, mask=mask, need_weights=True)
    assert torch.allclose(got, want, atol=TOL[dtype] * 10)
    assert torch.allclose(got_w, want_w, atol=TOL[dtype] * 10)
    assert torch.allclose(ours(x, mask=mask), want, atol=TOL[dtype] * 10)


def test_cross_attention_equals_torch_multiheadattention():
    torch.manual_seed(1)
    d, H = 16, 2
    theirs = nn.MultiheadAttention(d, H, batch_first=True).eval()
    ours = MultiHeadAttention(d, H, causal=True).eval()          # causal is ignored for cross-attention
    _copy_torch_mha(ours, theirs)
    x, memory = torch.randn(2, 5, d), torch.randn(2, 11, d)
    want, _ = theirs(x, memory, memory)
    assert torch.allclose(ours(x, context=memory), want, atol=1e-5)


def test_cross_attention_with_different_context_width_matches_torch_kdim_vdim():
    torch.manual_seed(2)
    theirs = nn.MultiheadAttention(16, 4, kdim=10, vdim=10, batch_first=True).eval()
    ours = MultiHeadAttention(16, 4, d_context=10).eval()
    with torch.no_grad():
        ours.q_proj.weight.copy_(theirs.q_proj_weight)
        ours.k_proj.weight.copy_(theirs.k_proj_weight)
        ours.v_proj.weight.copy_(theirs.v_proj_weight)
        for lin, b in zip((ours.q_proj, ours.k_proj, ours.v_proj), theirs.in_proj_bias.chunk(3)):
            lin.bias.copy_(b)
        ours.out_proj.load_state_dict(theirs.out_proj.state_dict())
    x, memory = torch.randn(2, 5, 16), torch.randn(2, 8, 10)
    want, _ = theirs(x, memory, memory)
    assert torch.allclose(ours(x, context=memory), want, atol=1e-5)


def test_cache_protocol_incremental_equals_full_forward():
    torch.manual_seed(3)
    mha = MultiHeadAttention(32, 8, n_kv_head=2, causal=True, bias=False).double().eval()
    x = torch.randn(2, 9, 32, dtype=torch.float64)
    full = mha(x)
    cache = ConcatCache()
    pieces = [mha(x[:, :4], cache=cache)] + [mha(x[:, t:t + 1], cache=cache) for t in range(4, 9)]
    assert torch.allclose(torch.cat(pieces, 1), full, atol=1e-12)
    assert cache.k.shape == (2, 2, 9, 4)                         # the cache holds n_kv_head heads


@pytest.mark.parametrize("call,match", [
    (lambda: explicit_attention(torch.randn(5, 4), torch.randn(7, 3), torch.randn(7, 2)), "d_K"),
    (lambda: explicit_attention(torch.randn(5, 4), torch.randn(7, 4), torch.randn(6, 2)), "same number of positions"),
    (lambda: scaled_dot_product_attention(torch.randn(1, 3, 5, 4), torch.randn(1, 2, 5, 4), torch.randn(1, 2, 5, 4)), "multiple"),
    (lambda: scaled_dot_product_attention(torch.randn(4), torch.randn(4), torch.randn(4)), "shape"),
    (lambda: scaled_dot_product_attention(torch.randn(2, 5, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 4),
                                          mask=torch.ones(3, 3, dtype=torch.bool)), "broadcast"),
    (lambda: causal_mask(5, 3), "n_query <= n_key"),
    (lambda: padding_mask(torch.tensor([1, 0])), "batch, length"),
    (lambda: padding_mask(torch.tensor([[1, 2]])), "only 0"),
    (lambda: MultiHeadAttention(10, 3), "divisible"),
    (lambda: MultiHeadAttention(12, 4, n_kv_head=3), "divide"),
    (lambda: MultiHeadAttention(8, 2)(torch.randn(2, 5, 6)), "batch, length, 8"),
])
def test_bad_input_raises_value_error_naming_the_problem(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_integer_inputs_raise_type_error():
    with pytest.raises(TypeError, match="floating-point"):
        explicit_attention(torch.ones(2, 2, dtype=torch.long), torch.ones(2, 2), torch.ones(2, 2))


NAN, INF = float("nan"), float("inf")
_Q = torch.randn(1, 2, 3, 4)


@pytest.mark.parametrize("bad", [
    lambda: scaled_dot_product_attention(_Q, _Q, _Q, scale=NAN),
    lambda: scaled_dot_product_attention(_Q, _Q, _Q, dropout_p=NAN),
    lambda: explicit_attention(_Q, _Q, _Q, scale=INF),
    lambda: MultiHeadAttention(8, 2, scale=NAN),
    lambda: MultiHeadAttention(0, 2),
    lambda: MultiHeadAttention(8, 2, dropout=1.0),
    lambda: MultiHeadAttention(8, 2, d_head=0),
    lambda: MultiHeadAttention(8, 2)(torch.zeros(1, 3, 8, dtype=torch.long)),
    lambda: MultiHeadAttention(8, 2)(torch.zeros(1, 0, 8)),
    lambda: MultiHeadAttention(8, 2)(torch.zeros(1, 3, 8), context=torch.zeros(2, 3, 8)),
    lambda: causal_mask(0),
    lambda: repeat_kv(_Q, 0),
    lambda: repeat_kv(torch.zeros(3, 4), 2),
    lambda: padding_mask(torch.tensor([[1, 2]])),
])
def test_bad_inputs_raise_value_or_type_errors(bad):
    with pytest.raises((ValueError, TypeError)):
        bad()


def test_cross_cache_reuses_the_encoder_keys_and_values():
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2, d_context=6).eval()
    z = torch.randn(2, 5, 6)
    cache = CrossCache()
    first = mha(torch.randn(2, 1, 8), context=z, cache=cache)
    assert cache.length == 5 and first.shape == (2, 1, 8)
    x = torch.randn(2, 1, 8)
    assert torch.allclose(mha(x, context=z, cache=cache), mha(x, context=z), atol=1e-6)


def test_fused_qkv_projection_equals_three_linears():
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4, n_kv_head=2, fused_qkv=True)
    x = torch.randn(2, 5, 16)
    q, k, v = mha.project_qkv(x)
    assert torch.allclose(q, mha.split_heads(mha.q_proj(x), 4), atol=1e-6)
    assert torch.allclose(k, mha.split_heads(mha.k_proj(x), 2), atol=1e-6)
    assert torch.allclose(v, mha.split_heads(mha.v_proj(x), 2), atol=1e-6)


@pytest.mark.parametrize("call, err, arg", [
    (lambda: scaled_dot_product_attention(_Q, _Q, _Q, scale=0.0), ValueError, "scale"),
    (lambda: scaled_dot_product_attention(_Q, _Q, _Q, scale=-1.0), ValueError, "scale"),
    (lambda: explicit_attention(_Q, _Q, _Q, scale=0.0), ValueError, "scale"),
    (lambda: MultiHeadAttention(8, 2, scale=-0.5), ValueError, "scale"),
    (lambda: causal_mask(True), TypeError, "n_query"),
    (lambda: causal_mask(3, 2.5), TypeError, "n_key"),
    (lambda: repeat_kv(torch.zeros(1, 2, 0, 4), 2), ValueError, "`x`"),
    (lambda: repeat_kv(3, 2), TypeError, "`x`"),
])
def test_second_probe_round_is_refused_by_name(call, err, arg):
    with pytest.raises(err, match=arg):
        call()


def test_module_checks_a_bad_mask_once_built():
    """The module skips the q, k, v checks it made true by construction, not the user's mask."""
    mha = MultiHeadAttention(8, 2)
    with pytest.raises(ValueError, match="broadcast"):
        mha(torch.randn(2, 5, 8), mask=torch.ones(3, 3, dtype=torch.bool))
    with pytest.raises(TypeError, match="mask"):
        mha(torch.randn(2, 5, 8), mask=[[True]])


@pytest.mark.parametrize("n_kv_head", [4, 2, 1])
def test_module_fast_path_equals_its_weights_path_with_gqa_and_padding(n_kv_head):
    """The fused kernel path of forward equals explicit_attention's (need_weights=True)."""
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4, n_kv_head=n_kv_head, causal=True).eval()
    x = torch.randn(2, 6, 16)
    keep = padding_mask(torch.tensor([[1] * 6, [1] * 4 + [0] * 2]))
    fast = mha(x, mask=keep)
    slow, weights = mha(x, mask=keep, need_weights=True)
    assert torch.allclose(fast, slow, atol=1e-6)
    assert torch.equal(weights[1, :, :, 4:], torch.zeros(4, 6, 2))  # padded keys unread


# Issue 31: NaN and inf in q, k, v (and repeat_kv's x) are refused by name at the functional
# entry points; MultiHeadAttention calls the kernel without that pass.
def _poison(t, value):
    t = t.clone()
    t[..., 1, 2] = value
    return t


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
@pytest.mark.parametrize("fn", [scaled_dot_product_attention, explicit_attention])
@pytest.mark.parametrize("which", ["q", "k", "v"])
def test_attention_refuses_non_finite_inputs_by_name(fn, which, value):
    qkv = {n: torch.randn(1, 2, 4, 8) for n in "qkv"}
    qkv[which] = _poison(qkv[which], value)
    with pytest.raises(ValueError, match=f"`{which}` holds NaN or inf"):
        fn(**qkv)


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_repeat_kv_refuses_non_finite_x(value):
    with pytest.raises(ValueError, match="`x` holds NaN or inf"):
        repeat_kv(_poison(torch.randn(1, 2, 4, 8), value), 2)
    x = torch.randn(1, 2, 4, 8)  # oracle: torch's own repeat_interleave on the head axis
    assert torch.equal(repeat_kv(x, 3), torch.repeat_interleave(x, 3, dim=1))


def test_attention_module_forward_runs_no_finite_check(monkeypatch):
    import course_llm.attention as attention
    seen = []
    real = attention.check_tensor
    monkeypatch.setattr(attention, "check_tensor", lambda *a, **kw: (
        seen.append(a[0]) if kw.get("finite") else None) or real(*a, **kw))
    mha = MultiHeadAttention(16, 4, n_kv_head=2, causal=True)
    mha(torch.randn(2, 5, 16)).sum().backward()
    assert seen == []

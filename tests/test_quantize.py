"""Tests of course_llm.quantize: closed forms (codes, bits per weight), F.linear, brute-force rounding
(symmetric, float-minimum and zero-point grids), GGUF Q8_0 and Q4_1 blocks."""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from course_llm.gpt import GPT
from course_llm.gpt_config import GPTConfig
from course_llm.quantize import (QuantizedTensor, QuantLinear, dequantize, model_bytes, quantize_model,
                                 quantize_tensor)


FORMS = {"symmetric": {}, "float minimum": {"symmetric": False},
         "zero-point": {"symmetric": False, "zero_point": True}}
EPS32 = torch.finfo(torch.float32).eps


def _grid(x, bits, form):
    """All values a group x (float64) may dequantize to, from the closed-form definitions."""
    if form == "symmetric":
        top = 2 ** (bits - 1) - 1
        return torch.arange(-top, top + 1, dtype=torch.float64) * (x.abs().max() / top)
    top = 2 ** bits - 1
    if form == "float minimum":
        s = (x.max() - x.min()) / top
        return torch.arange(0, top + 1, dtype=torch.float64) * s + x.min()
    lo, hi = min(x.min().item(), 0.0), max(x.max().item(), 0.0)       # the range holds 0
    s = (hi - lo) / top
    z = round(-lo / s)                                                 # an integer zero-point
    return (torch.arange(0, top + 1, dtype=torch.float64) - z) * s


def _brute_force(w, bits, group, form):
    """Nearest point of each group's grid, found by trying every code (independent of the module)."""
    out = torch.empty_like(w, dtype=torch.float64)
    for r in range(w.size(0)):
        for g0 in range(0, w.size(1), group):
            x = w[r, g0:g0 + group].double()
            grid = _grid(x, bits, form)
            out[r, g0:g0 + group] = grid[(x[:, None] - grid[None, :]).abs().argmin(1)]
    return out


def _within_half_step(w, w_hat, q):
    """|w - w_hat| <= step / 2, up to float32 rounding of scale * code + offset (a few ulps of |w|)."""
    step = q.scale.repeat_interleave(q.group_size, dim=1)                 # (out, in)
    slack = 8 * EPS32 * w.abs().max()
    return bool(((w_hat - w).abs() <= step / 2 + slack).all())


@pytest.mark.parametrize("bits", [4, 8])
@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("group", [4, 16, None])
def test_round_trip_is_the_nearest_grid_point(bits, form, group):
    g = torch.Generator().manual_seed(bits * 10 + (group or 0) + len(form))
    w = torch.randn(6, 32, generator=g)
    w[2, 5] = 9.0                                                            # an outlier
    w[4, :4] = w[4, :4].abs() + 0.1                                          # a group of one sign
    q = quantize_tensor(w, bits, group, **FORMS[form])
    want = _brute_force(w, bits, group or 32, form)
    assert torch.allclose(dequantize(q).double(), want, atol=8 * EPS32 * w.abs().max().item())
    assert _within_half_step(w, dequantize(q), q)


def test_half_step_check_can_fail():
    """The bound of the test above rejects a round trip that floors, or that uses too few levels."""
    w = torch.randn(8, 64, generator=torch.Generator().manual_seed(0))
    q = quantize_tensor(w, 4, 16)
    step = q.scale.repeat_interleave(16, dim=1)
    assert _within_half_step(w, dequantize(q), q)
    assert not _within_half_step(w, torch.floor(w / step) * step, q)           # floor, not round
    assert not _within_half_step(w, torch.round(w / step).clamp(-6, 6) * step, q)  # 13 levels
    assert not _within_half_step(w, dequantize(q) + 0.51 * step, q)              # a shifted grid


def test_zero_point_keeps_zero_exactly():
    g = torch.Generator().manual_seed(1)
    w = torch.randn(16, 64, generator=g)
    w[:, ::7] = 0.0                                                          # zeros in every group
    w[3, :16] = w[3, :16].abs()                                              # groups of one sign
    w[5, 16:32] = -w[5, 16:32].abs()
    w[7, 32:48] = 0.0                                                        # an all-zero group
    for bits in (4, 8):
        for group in (16, 64):
            q = quantize_tensor(w, bits, group, symmetric=False, zero_point=True)
            w_hat = dequantize(q)
            assert (w_hat[w == 0] == 0).all()
            assert q.zero.dtype == torch.uint8 and int(q.zero.max()) <= 2 ** bits - 1
            if group == 16:                                   # lo = 0 -> z = 0; hi = 0 -> z = top
                assert q.zero[3, 0] == 0 and q.zero[5, 1] == 2 ** bits - 1
    fm = dequantize(quantize_tensor(w, 4, 16, symmetric=False))              # the float minimum
    plain = [r for r in range(16) if r not in (3, 5, 7)]                     # groups across 0
    assert (fm[plain][w[plain] == 0] != 0).float().mean() > 0.9              # moves most zeros


def test_codes_closed_form_and_packing():
    w = torch.tensor([[0.5, -1.0, 0.25, 0.0]])
    z = quantize_tensor(w, 4, 4, symmetric=False, zero_point=True)
    # s = (0.5 - (-1)) / 15 = 0.1, z = round(1 / 0.1) = 10, codes = round(w / s) + 10
    assert z.zero.tolist() == [[10]] and torch.allclose(z.scale, torch.tensor([[0.1]]))
    assert z.codes.tolist() == [[15 | 0 << 4, 12 | 10 << 4]] and z.offset is None
    q = quantize_tensor(w, 8, 4)
    assert q.codes.tolist() == [[64, -127, 32, 0]] and q.codes.dtype == torch.int8
    q4 = quantize_tensor(torch.tensor([[0.3, -1.0, 0.6, 0.0]]), 4, 4)          # no ties at x.5
    assert q4.codes.shape == (1, 2) and q4.codes.dtype == torch.uint8            # two codes per byte
    codes = [round(x * 7) + 8 for x in (0.3, -1.0, 0.6, 0.0)]                   # stored plus 8
    assert q4.codes.tolist() == [[codes[0] | codes[1] << 4, codes[2] | codes[3] << 4]]
    big = quantize_tensor(torch.randn(64, 128), 4, 32)
    assert big.nbytes == 64 * 128 // 2 + 64 * 4 * 4                             # codes + float32 scales


@pytest.mark.parametrize("bits", [4, 8])
@pytest.mark.parametrize("group", [16, 32, 128, None])
def test_bits_per_weight_closed_form(bits, group):
    w = torch.randn(24, 128)
    G = group or 128
    extra = {"symmetric": 32, "float minimum": 32 + 32, "zero-point": 32 + 8}     # bits per group
    for form, kw in FORMS.items():
        q = quantize_tensor(w, bits, group, **kw)
        assert q.bits_per_weight == bits + extra[form] / G                       # dyadic: exact
        assert q.nbytes * 8 == 24 * 128 * bits + 24 * (128 // G) * extra[form]


def test_constant_and_zero_groups():
    w = torch.zeros(3, 8)
    w[1] = 3.0
    w[2] = -0.75
    for kw in FORMS.values():
        assert torch.allclose(dequantize(quantize_tensor(w, 4, 4, **kw)), w, rtol=1e-6, atol=0)
        assert (dequantize(quantize_tensor(w, 8, 4, **kw))[0] == 0).all()


def test_gguf_q8_0_block_is_reproduced():
    """A Q8_0 block built by the GGUF definition (d = absmax/127, q = round(x/d)) round-trips exactly."""
    w = torch.randn(3, 64)
    d = w.reshape(3, 2, 32).abs().amax(-1, keepdim=True) / 127
    gguf = (torch.round(w.reshape(3, 2, 32) / d) * d).reshape(3, 64)
    assert torch.allclose(dequantize(quantize_tensor(gguf, 8, 32)), gguf, atol=1e-7)


def test_gguf_q4_1_block_is_reproduced():
    """A Q4_1 block built by the GGUF definition (d = (max - min)/15, m = min, q = round((x - m)/d))
    is on the float-minimum grid, so quantizing it again gives it back."""
    w = torch.randn(3, 64)
    blocks = w.reshape(3, 2, 32)
    m = blocks.amin(-1, keepdim=True)
    d = (blocks.amax(-1, keepdim=True) - m) / 15
    gguf = (torch.round((blocks - m) / d) * d + m).reshape(3, 64)
    again = dequantize(quantize_tensor(gguf, 4, 32, symmetric=False))
    assert torch.allclose(again, gguf, atol=1e-6)


def test_quant_linear_matches_dequantize_and_f_linear():
    lin = nn.Linear(64, 10)
    x = torch.randn(3, 7, 64)
    for bits in (4, 8):
        ql = QuantLinear.from_linear(lin, bits=bits, group_size=16)
        want = F.linear(x, dequantize(quantize_tensor(lin.weight.detach(), bits, 16)), lin.bias)
        assert torch.allclose(ql(x), want, atol=1e-6)
    assert (QuantLinear.from_linear(lin, bits=8, group_size=16)(x) - lin(x)).abs().max() < 0.02
    state = ql.state_dict()
    assert {"codes", "scale", "bias"} <= set(state)
    assert isinstance(ql.qweight, QuantizedTensor)
    zl = QuantLinear.from_linear(lin, bits=4, group_size=16, symmetric=False, zero_point=True)
    want = F.linear(x, dequantize(quantize_tensor(lin.weight.detach(), 4, 16, symmetric=False,
                                                  zero_point=True)), lin.bias)
    assert torch.allclose(zl(x), want, atol=1e-6) and "zero" in zl.state_dict()
    assert torch.equal(dequantize(zl.qweight), dequantize(quantize_tensor(
        lin.weight.detach(), 4, 16, symmetric=False, zero_point=True)))


def test_quantize_model_on_a_gpt():
    cfg = GPTConfig.llama_style(vocab_size=40, max_len=16, n_layer=2, d_model=32, n_head=4,
                                n_kv_head=2, d_ff=64)
    model = GPT(cfg).eval()
    idx = torch.randint(0, 40, (2, 10))
    with torch.no_grad():
        ref = model(idx)[0]
        n_linear = sum(isinstance(m, nn.Linear) for m in model.modules())
        assert quantize_model(model, 8, 16) is model
        got = model(idx)[0]
    quantized = [n for n, m in model.named_modules() if isinstance(m, QuantLinear)]
    assert len(quantized) == n_linear - 1 and "lm_head" not in quantized        # skip=("lm_head",)
    assert (got - ref).abs().max() < 0.02
    m2 = GPT(cfg)
    quantize_model(m2, 4, 16, skip=("lm_head", "blocks.0.*"), symmetric=False, zero_point=True)
    assert all(m.zero is not None for m in m2.modules() if isinstance(m, QuantLinear))
    assert not any(n.startswith("blocks.0.") for n, m in m2.named_modules() if isinstance(m, QuantLinear))


def test_model_bytes_counts_tied_weights_once():
    cfg = GPTConfig.llama_style(vocab_size=40, max_len=16, n_layer=1, d_model=32, n_head=4,
                                n_kv_head=2, d_ff=64)
    model = GPT(cfg)
    unique = {p.data_ptr(): p.numel() * 4 for p in model.parameters()}
    assert model_bytes(model) == sum(unique.values()) + sum(b.nbytes for b in model.buffers())


@pytest.mark.parametrize("args,err,match", [
    ((torch.randn(4, 8), 3, 4), ValueError, "bits"),
    ((torch.randn(4, 8), 16, 4), ValueError, "bits"),
    ((torch.randn(4, 8), 8, 3), ValueError, "does not divide the 8 input features"),
    ((torch.randn(4, 8), 8, 0), ValueError, "group_size"),
    ((torch.randn(4, 6), 4, 3), ValueError, "even"),
    ((torch.randn(8, 4).T, 8, 4), ValueError, "contiguous"),
    ((torch.randint(0, 3, (4, 8)), 8, 4), TypeError, "float"),
    ((torch.randn(8), 8, 4), ValueError, "2 dimensions"),
    ((torch.full((2, 4), float("nan")), 8, 4), ValueError, "NaN"),
    ((torch.zeros(0, 4), 8, 4), ValueError, "empty"),
    (([[1.0]], 8, 1), TypeError, "torch.Tensor"),
])
def test_bad_inputs(args, err, match):
    with pytest.raises(err, match=match):
        quantize_tensor(*args)


def test_bad_model_inputs():
    with pytest.raises(TypeError, match="symmetric"):
        quantize_tensor(torch.randn(2, 4), 8, 4, symmetric="yes")
    with pytest.raises(TypeError, match="zero_point"):
        quantize_tensor(torch.randn(2, 4), 8, 4, symmetric=False, zero_point=1)
    with pytest.raises(ValueError, match="symmetric=False"):
        quantize_tensor(torch.randn(2, 4), 8, 4, zero_point=True)
    with pytest.raises(TypeError, match="QuantizedTensor"):
        dequantize(torch.randn(2, 2))
    with pytest.raises(TypeError, match="nn.Linear"):
        QuantLinear.from_linear(nn.Conv1d(2, 2, 1))
    with pytest.raises(TypeError, match="nn.Module"):
        quantize_model("gpt", 8, 4)
    with pytest.raises(TypeError, match="skip"):
        quantize_model(nn.Linear(4, 4), 8, 4, skip="lm_head")
    with pytest.raises(ValueError, match="no nn.Linear"):
        quantize_model(nn.Sequential(nn.Linear(4, 4)), 8, 4, skip=("*",))
    model = nn.Sequential(nn.Linear(8, 8), nn.Linear(6, 2))
    with pytest.raises(ValueError, match="layer `1`"):
        quantize_model(model, 8, 4)
    assert isinstance(model[0], nn.Linear)                                  # nothing half-done

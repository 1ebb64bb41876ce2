"""Tests of course_llm.quantize: closed forms (absmax codes), F.linear, brute-force rounding, GGUF blocks."""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from course_llm.gpt import GPT, GPTConfig
from course_llm.quantize import (QuantizedTensor, QuantLinear, dequantize, model_bytes, quantize_model,
                                 quantize_tensor)


def _brute_force(w, bits, group, symmetric):
    """Nearest point of each group's grid, found by trying every code (independent of the module)."""
    out = torch.empty_like(w, dtype=torch.float64)
    for r in range(w.size(0)):
        for g0 in range(0, w.size(1), group):
            x = w[r, g0:g0 + group].double()
            if symmetric:
                top = 2 ** (bits - 1) - 1
                s = x.abs().max() / top
                grid = torch.arange(-top, top + 1, dtype=torch.float64) * s
            else:
                s = (x.max() - x.min()) / (2 ** bits - 1)
                grid = torch.arange(0, 2 ** bits, dtype=torch.float64) * s + x.min()
            out[r, g0:g0 + group] = grid[(x[:, None] - grid[None, :]).abs().argmin(1)]
    return out


@pytest.mark.parametrize("bits", [4, 8])
@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize("group", [4, 16, None])
def test_round_trip_is_the_nearest_grid_point(bits, symmetric, group):
    g = torch.Generator().manual_seed(bits * 10 + group if group else bits)
    w = torch.randn(6, 32, generator=g)
    w[2, 5] = 9.0                                                            # an outlier
    q = quantize_tensor(w, bits, group, symmetric=symmetric)
    want = _brute_force(w, bits, group or 32, symmetric)
    assert torch.allclose(dequantize(q).double(), want, atol=1e-6)
    step = q.scale.repeat_interleave(q.group_size, dim=1)
    assert ((dequantize(q) - w).abs() <= step / 2 * (1 + 1e-5) + 1e-9).all()


def test_codes_closed_form_and_packing():
    w = torch.tensor([[0.5, -1.0, 0.25, 0.0]])
    q = quantize_tensor(w, 8, 4)
    assert q.codes.tolist() == [[64, -127, 32, 0]] and q.codes.dtype == torch.int8
    q4 = quantize_tensor(torch.tensor([[0.3, -1.0, 0.6, 0.0]]), 4, 4)          # no ties at x.5
    assert q4.codes.shape == (1, 2) and q4.codes.dtype == torch.uint8            # two codes per byte
    codes = [round(x * 7) + 8 for x in (0.3, -1.0, 0.6, 0.0)]                   # stored plus 8
    assert q4.codes.tolist() == [[codes[0] | codes[1] << 4, codes[2] | codes[3] << 4]]
    big = quantize_tensor(torch.randn(64, 128), 4, 32)
    assert big.nbytes == 64 * 128 // 2 + 64 * 4 * 4                             # codes + float32 scales


def test_constant_and_zero_groups():
    w = torch.zeros(2, 8)
    w[1] = 3.0
    for symmetric in (True, False):
        assert torch.equal(dequantize(quantize_tensor(w, 4, 4, symmetric=symmetric)), w)


def test_gguf_q8_0_block_is_reproduced():
    """A Q8_0 block built by the GGUF definition (d = absmax/127, q = round(x/d)) round-trips exactly."""
    w = torch.randn(3, 64)
    d = w.reshape(3, 2, 32).abs().amax(-1, keepdim=True) / 127
    gguf = (torch.round(w.reshape(3, 2, 32) / d) * d).reshape(3, 64)
    assert torch.allclose(dequantize(quantize_tensor(gguf, 8, 32)), gguf, atol=1e-7)


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


def test_quantize_model_on_a_gpt():
    cfg = GPTConfig.llama_style(vocab_size=40, block_size=16, n_layer=2, d_model=32, n_head=4,
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
    quantize_model(m2, 4, 16, skip=("lm_head", "blocks.0.*"))
    assert not any(n.startswith("blocks.0.") for n, m in m2.named_modules() if isinstance(m, QuantLinear))


def test_model_bytes_counts_tied_weights_once():
    cfg = GPTConfig.llama_style(vocab_size=40, block_size=16, n_layer=1, d_model=32, n_head=4,
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

"""course_llm.layers against independent oracles: torch's norms and activations, closed forms,
explicit rotation matrices, torch.nn.Transformer{Encoder,Decoder}Layer and Hugging Face's Llama
decoder layer with copied weights."""

import math

import pytest
import torch
from concat_cache import ConcatCache
import torch.nn as nn
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from course_llm.attention import MultiHeadAttention
from course_llm.masks import causal_mask, padding_mask
from course_llm.feedforward import GLU, MLP, ffn_flops, gelu, glu_hidden_dim, silu, swish
from course_llm.positions import PositionEmbedding, RotaryEmbedding, apply_rope, rope_rotation_matrix, sinusoidal_positions
from course_llm.norms import RMSNorm, layer_norm, rms_norm, make_norm
from course_llm.layers import TransformerBlock, TransformerConfig
from course_llm.kv_cache import kv_cache_bytes_per_token

torch.set_num_threads(1)


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-5), (torch.float64, 1e-12)])
def test_layer_norm_equals_torch(dtype, tol):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, 5, 16, generator=g, dtype=dtype) * 4 + 2
    gamma, beta = torch.randn(16, generator=g, dtype=dtype), torch.randn(16, generator=g, dtype=dtype)
    assert torch.allclose(layer_norm(x, gamma, beta, eps=1e-5), F.layer_norm(x, (16,), gamma, beta, 1e-5), atol=tol)
    assert torch.allclose(layer_norm(x, gamma, None), F.layer_norm(x, (16,), gamma, None), atol=tol)


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-6), (torch.float64, 1e-12)])
@pytest.mark.parametrize("eps", [1e-6, 1e-5])
def test_rms_norm_equals_torch_rmsnorm(dtype, tol, eps):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 7, 24, generator=g, dtype=dtype) * 3
    ours = RMSNorm(24, eps=eps).to(dtype)
    with torch.no_grad():
        ours.weight.copy_(torch.randn(24, generator=g, dtype=dtype))
    theirs = nn.RMSNorm(24, eps=eps).to(dtype)
    theirs.load_state_dict(ours.state_dict())
    assert torch.allclose(ours(x), theirs(x), atol=tol)
    assert torch.allclose(rms_norm(x, ours.weight, eps), theirs(x), atol=tol)


def test_rms_norm_bfloat16_is_computed_in_float32():
    x = torch.randn(4, 32, dtype=torch.bfloat16)
    norm = RMSNorm(32).to(torch.bfloat16)
    y = norm(x)
    assert y.dtype == torch.bfloat16
    # Llama's recipe: normalise in float32, cast back, then scale
    xf = x.float()
    want = norm.weight * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(torch.bfloat16)
    assert torch.equal(y, want)


def test_activations_equal_torch():
    x = torch.linspace(-6, 6, 1001, dtype=torch.float64)
    assert torch.allclose(gelu(x), F.gelu(x), atol=1e-14)
    assert torch.allclose(gelu(x, "tanh"), F.gelu(x, approximate="tanh"), atol=1e-14)
    assert torch.allclose(silu(x), F.silu(x), atol=1e-14)
    for beta in (0.5, 2.0):                                     # Swish_beta(x) = SiLU(beta x) / beta
        assert torch.allclose(swish(x, beta), F.silu(beta * x) / beta, atol=1e-14)
    with pytest.raises(ValueError, match="approximate"):
        gelu(x, "erf")


def test_sinusoidal_table_matches_formula():
    d = 10
    table = sinusoidal_positions(20, d)
    for pos in (0, 3, 19):
        for i in range(d // 2):
            angle = pos / 10000 ** (2 * i / d)
            assert abs(table[pos, 2 * i] - math.sin(angle)) < 1e-6
            assert abs(table[pos, 2 * i + 1] - math.cos(angle)) < 1e-6
    with pytest.raises(ValueError, match="even"):
        sinusoidal_positions(4, 7)


def test_position_embedding_rejects_positions_beyond_max_len():
    pe = PositionEmbedding("learned", 8, 4)
    assert pe(torch.arange(8)).shape == (8, 4)
    with pytest.raises(ValueError, match="max_len"):
        pe(torch.arange(9))


@pytest.mark.parametrize("pos", [0, 1, 7, 123])
def test_rope_equals_explicit_rotation_matrix(pos):
    g = torch.Generator().manual_seed(pos)
    x = torch.randn(3, 12, generator=g, dtype=torch.float64)
    R = rope_rotation_matrix(pos, 12)
    want = x @ R.T                                               # each row: R_pos x
    got = apply_rope(x[:, None, :], torch.tensor([pos]), interleaved=True)[:, 0]
    assert torch.allclose(got, want, atol=1e-12)
    # half-split layout = interleaved layout after permuting coordinates
    perm = torch.cat([torch.arange(0, 12, 2), torch.arange(1, 12, 2)])
    half = apply_rope(x[:, None, perm], torch.tensor([pos]))[:, 0]
    assert torch.allclose(half, want[:, perm], atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(i=st.integers(0, 2000), j=st.integers(0, 2000), shift=st.integers(-500, 2000), seed=st.integers(0, 10_000))
def test_rope_scores_depend_only_on_relative_position(i, j, shift, seed):
    if i + shift < 0 or j + shift < 0:
        shift = 0
    g = torch.Generator().manual_seed(seed)
    q, k = torch.randn(2, 1, 32, generator=g, dtype=torch.float64)
    score = lambda a, b: (apply_rope(q, torch.tensor([a])) * apply_rope(k, torch.tensor([b]))).sum().item()
    assert math.isclose(score(i, j), score(i + shift, j + shift), rel_tol=1e-9, abs_tol=1e-9)


def test_rope_batched_positions_match_per_row():
    x = torch.randn(2, 3, 5, 8, dtype=torch.float64)
    positions = torch.tensor([[0, 1, 2, 3, 4], [7, 8, 9, 10, 11]])
    got = apply_rope(x, positions)
    for b in range(2):
        assert torch.allclose(got[b], apply_rope(x[b], positions[b]), atol=1e-12)


def test_ffn_widths_and_flops():
    assert glu_hidden_dim(4096, multiple_of=256) == 11008      # Llama-7B
    for d in (64, 768, 4096):
        assert ffn_flops(d, 4 * d, gated=False) == 16 * d * d
        assert abs(ffn_flops(d, 8 * d / 3, gated=True) - 16 * d * d) < 1e-6 * d * d
    assert sum(p.numel() for p in MLP(8, 32, bias=False).parameters()) == 2 * 8 * 32
    assert sum(p.numel() for p in GLU(8, 24).parameters()) == 3 * 8 * 24
    assert kv_cache_bytes_per_token(12, 12, 64) == 2 * 12 * 12 * 64 * 2


def test_swiglu_matches_formula():
    torch.manual_seed(0)
    glu = GLU(8, 20, activation="silu").double()
    x = torch.randn(3, 8, dtype=torch.float64)
    want = (F.silu(x @ glu.w1.weight.T) * (x @ glu.v.weight.T)) @ glu.w2.weight.T
    assert torch.allclose(glu(x), want, atol=1e-12)


def _copy_mha(ours, theirs):
    with torch.no_grad():
        for lin, w, b in zip((ours.q_proj, ours.k_proj, ours.v_proj), theirs.in_proj_weight.chunk(3),
                             theirs.in_proj_bias.chunk(3)):
            lin.weight.copy_(w)
            lin.bias.copy_(b)
        ours.out_proj.load_state_dict(theirs.out_proj.state_dict())


@pytest.mark.parametrize("pre_norm", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("causal", [False, True])
def test_block_equals_torch_transformer_encoder_layer(pre_norm, activation, causal):
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, dropout=0.0, activation=activation,
                                       batch_first=True, norm_first=pre_norm).double().eval()
    block = TransformerBlock(TransformerConfig(d_model=32, n_head=4, d_ff=64, activation=activation,
                                               pre_norm=pre_norm, causal=causal)).double().eval()
    _copy_mha(block.attn, layer.self_attn)
    block.ffn.w1.load_state_dict(layer.linear1.state_dict())
    block.ffn.w2.load_state_dict(layer.linear2.state_dict())
    block.norm1.load_state_dict(layer.norm1.state_dict())
    block.norm2.load_state_dict(layer.norm2.state_dict())
    x = torch.randn(3, 9, 32, dtype=torch.float64)
    am = torch.ones(3, 9, dtype=torch.long)
    am[1, 6:] = 0
    kw = {"src_mask": ~causal_mask(9), "is_causal": True} if causal else {}
    want = layer(x, src_key_padding_mask=am == 0, **kw)
    got = block(x, mask=padding_mask(am))
    assert torch.allclose(got, want, atol=1e-10)


@pytest.mark.parametrize("pre_norm", [False, True])
def test_cross_attention_block_equals_torch_transformer_decoder_layer(pre_norm):
    torch.manual_seed(1)
    layer = nn.TransformerDecoderLayer(32, 4, dim_feedforward=48, dropout=0.0, batch_first=True,
                                       norm_first=pre_norm).double().eval()
    block = TransformerBlock(TransformerConfig(d_model=32, n_head=4, d_ff=48, activation="relu",
                                               pre_norm=pre_norm, causal=True,
                                               cross_attention=True)).double().eval()
    _copy_mha(block.attn, layer.self_attn)
    _copy_mha(block.cross_attn, layer.multihead_attn)
    block.ffn.w1.load_state_dict(layer.linear1.state_dict())
    block.ffn.w2.load_state_dict(layer.linear2.state_dict())
    for ours, theirs in ((block.norm1, layer.norm1), (block.norm_cross, layer.norm2), (block.norm2, layer.norm3)):
        ours.load_state_dict(theirs.state_dict())
    x, memory = torch.randn(2, 6, 32, dtype=torch.float64), torch.randn(2, 10, 32, dtype=torch.float64)
    want = layer(x, memory, tgt_mask=~causal_mask(6), tgt_is_causal=True)
    assert torch.allclose(block(x, context=memory), want, atol=1e-10)


def test_unmasked_block_without_positions_is_permutation_equivariant():
    torch.manual_seed(2)
    for cfg in (TransformerConfig(d_model=32, n_head=4, position="none"),
                TransformerConfig(d_model=32, n_head=4, n_kv_head=2, position="none", norm="rms",
                                  ffn="glu", activation="silu", bias=False, pre_norm=False)):
        block = TransformerBlock(cfg).double().eval()
        x = torch.randn(2, 11, 32, dtype=torch.float64)
        perm = torch.randperm(11)
        assert torch.allclose(block(x)[:, perm], block(x[:, perm]), atol=1e-12)


@pytest.mark.parametrize("n_kv_head", [4, 2, 1])
def test_gqa_equals_torch_mha_with_repeated_kv_weights(n_kv_head):
    torch.manual_seed(3)
    H, dh, d = 4, 6, 24
    gqa = MultiHeadAttention(d, H, n_kv_head=n_kv_head, bias=False, causal=True).double().eval()
    rep = lambda w: w.view(n_kv_head, dh, d).repeat_interleave(H // n_kv_head, 0).reshape(H * dh, d)
    mha = nn.MultiheadAttention(d, H, bias=False, batch_first=True).double().eval()
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([gqa.q_proj.weight, rep(gqa.k_proj.weight), rep(gqa.v_proj.weight)]))
        mha.out_proj.weight.copy_(gqa.out_proj.weight)
    x = torch.randn(2, 8, d, dtype=torch.float64)
    want, _ = mha(x, x, x, attn_mask=~causal_mask(8))
    assert torch.allclose(gqa(x), want, atol=1e-12)


def test_gqa_with_n_kv_head_equal_n_head_is_mha():
    torch.manual_seed(4)
    a = MultiHeadAttention(16, 4, n_kv_head=4).eval()
    b = MultiHeadAttention(16, 4).eval()
    b.load_state_dict(a.state_dict())
    x = torch.randn(2, 5, 16)
    assert torch.equal(a(x), b(x))


def test_rope_gqa_block_incremental_with_cache_equals_full():
    torch.manual_seed(5)
    cfg = TransformerConfig(d_model=32, n_head=4, n_kv_head=2, norm="rms", ffn="glu", activation="silu",
                            position="rope", bias=False, causal=True)
    block = TransformerBlock(cfg).double().eval()
    x = torch.randn(2, 10, 32, dtype=torch.float64)
    full = block(x)
    cache = ConcatCache()
    steps = [block(x[:, :6], cache=cache)] + [block(x[:, t:t + 1], cache=cache) for t in range(6, 10)]
    assert torch.allclose(torch.cat(steps, 1), full, atol=1e-12)


def test_llama_style_block_equals_hugging_face_llama_decoder_layer():
    transformers = pytest.importorskip("transformers")
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer, LlamaRotaryEmbedding

    hf_cfg = transformers.LlamaConfig(hidden_size=64, intermediate_size=160, num_attention_heads=8,
                                      num_key_value_heads=2, rms_norm_eps=1e-6, rope_theta=10000.0,
                                      max_position_embeddings=128, attn_implementation="eager")
    torch.manual_seed(6)
    hf = LlamaDecoderLayer(hf_cfg, layer_idx=0).eval()
    cfg = TransformerConfig(d_model=64, n_head=8, n_kv_head=2, d_ff=160, norm="rms", norm_eps=1e-6,
                            ffn="glu", activation="silu", position="rope", bias=False, causal=True)
    ours = TransformerBlock(cfg).eval()
    names = {"attn.q_proj": "self_attn.q_proj", "attn.k_proj": "self_attn.k_proj",
             "attn.v_proj": "self_attn.v_proj", "attn.out_proj": "self_attn.o_proj",
             "ffn.w1": "mlp.gate_proj", "ffn.v": "mlp.up_proj", "ffn.w2": "mlp.down_proj",
             "norm1": "input_layernorm", "norm2": "post_attention_layernorm"}
    hf_state = hf.state_dict()
    ours.load_state_dict({k: hf_state[k.replace(a, b, 1)] for k in ours.state_dict()
                          for a, b in names.items() if k.startswith(a + ".")})
    x = torch.randn(2, 12, 64)
    positions = torch.arange(12)[None].expand(2, 12)
    cos_sin = LlamaRotaryEmbedding(hf_cfg)(x, positions)
    mask = torch.full((12, 12), float("-inf")).triu(1)[None, None]
    out = hf(x, attention_mask=mask, position_ids=positions, position_embeddings=cos_sin)
    want = out[0] if isinstance(out, tuple) else out
    assert torch.allclose(ours(x), want, atol=1e-5)


@pytest.mark.parametrize("kwargs,match", [
    ({"norm": "batch"}, "norm"),
    ({"ffn": "moe"}, "ffn"),
    ({"position": "alibi"}, "position"),
    ({"activation": "tanh"}, "activation"),
    ({"d_model": 30, "n_head": 4}, "divisible"),
    ({"n_kv_head": 3}, "divide"),
    ({"d_model": 24, "n_head": 8, "position": "rope"}, "even"),
])
def test_config_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        TransformerConfig(**kwargs)


def test_block_input_validation():
    block = TransformerBlock(TransformerConfig(d_model=16, n_head=2))
    with pytest.raises(ValueError, match="batch, length, 16"):
        block(torch.randn(2, 3, 8))
    with pytest.raises(ValueError, match="cross_attention"):
        block(torch.randn(2, 3, 16), context=torch.randn(2, 4, 16))
    with pytest.raises(TypeError, match="TransformerConfig"):
        TransformerBlock({"d_model": 16})
    with pytest.raises(ValueError, match="positions"):
        RotaryEmbedding(8)(torch.randn(1, 2, 5, 8), torch.arange(4))


NAN = float("nan")


@pytest.mark.parametrize("bad", [
    lambda: rms_norm(torch.randn(3, 4), torch.ones(3, 1)),                  # a gamma per row
    lambda: rms_norm(torch.randn(3, 4), torch.ones(5)),
    lambda: rms_norm(torch.randn(3, 4), torch.ones(4), eps=NAN),
    lambda: layer_norm(torch.randn(3, 4), torch.ones(5), torch.zeros(4)),
    lambda: layer_norm(torch.randn(3, 4), torch.ones(4), torch.zeros(3)),
    lambda: layer_norm(torch.randn(3, 4), torch.ones(4), None, eps=NAN),
    lambda: layer_norm(torch.ones(3, 4, dtype=torch.long), torch.ones(4), None),
    lambda: GLU(8, 0),
    lambda: MLP(0, 8),
    lambda: MLP(8, 16, activation="tanh"),
    lambda: RMSNorm(4, eps=-1.0),
    lambda: RMSNorm(4)(torch.randn(2, 5)),
    lambda: gelu(torch.tensor([1, 2])),
    lambda: gelu(torch.randn(2), "fast"),
    lambda: swish(torch.randn(2), NAN),
    lambda: glu_hidden_dim(0),
    lambda: ffn_flops(8, NAN, gated=True),
    lambda: sinusoidal_positions(4, 5),
    lambda: sinusoidal_positions(0, 4),
    lambda: PositionEmbedding("learned", 8, 4)(torch.tensor([-1])),
    lambda: PositionEmbedding("learned", 8, 4)(torch.tensor([0.5])),
    lambda: PositionEmbedding("rope", 8, 4),
    lambda: apply_rope(torch.randn(1, 3, 5), torch.arange(3)),
    lambda: apply_rope(torch.randn(1, 3, 4), torch.arange(3), base=NAN),
    lambda: RotaryEmbedding(0),
    lambda: rope_rotation_matrix(0, 3),
    lambda: kv_cache_bytes_per_token(0, 1, 1),
    lambda: TransformerConfig(dropout=NAN),
    lambda: TransformerConfig(norm_eps=-1.0),
    lambda: TransformerConfig(d_ff=0),
    lambda: TransformerConfig(attention_scale=float("inf")),
    lambda: TransformerConfig(64),                                         # keywords only
    lambda: make_norm("rms"),
    lambda: TransformerBlock(TransformerConfig(d_model=8, n_head=2))(torch.randn(2, 3, 9)),
])
def test_bad_inputs_raise_value_or_type_errors(bad):
    with pytest.raises((ValueError, TypeError)):
        bad()


def test_rms_norm_accepts_one_scalar_gain():
    x = torch.randn(3, 4, dtype=torch.float64)
    assert torch.allclose(rms_norm(x, 2.0), 2 * rms_norm(x, torch.ones(4, dtype=torch.float64)))


def test_decoder_block_with_cross_cache_equals_uncached():
    torch.manual_seed(0)
    from course_llm.kv_cache import CrossCache
    block = TransformerBlock(TransformerConfig(d_model=16, n_head=4, causal=True, cross_attention=True,
                                               position="none")).eval()
    z, y = torch.randn(2, 6, 16), torch.randn(2, 4, 16)
    full = block(y, context=z)
    caches, cross = ConcatCache(), CrossCache()
    steps = [block(y[:, t:t + 1], context=z, cache=caches, context_cache=cross) for t in range(4)]
    assert torch.allclose(torch.cat(steps, 1), full, atol=1e-5)


# Issue 17's probe, second round: zero sizes, eps = 0 and negative positions are refused by name.
@pytest.mark.parametrize("call, err, arg", [
    (lambda: layer_norm(torch.randn(3, 4), torch.ones(4), torch.zeros(4), eps=0.0), ValueError, "eps"),
    (lambda: layer_norm(torch.randn(0, 4), torch.ones(4), torch.zeros(4)), ValueError, "`x`"),
    (lambda: rms_norm(torch.randn(3, 4), torch.ones(4), eps=0.0), ValueError, "eps"),
    (lambda: rms_norm(torch.randn(0, 4), torch.ones(4)), ValueError, "`x`"),
    (lambda: RMSNorm(4, eps=0.0), ValueError, "eps"),
    (lambda: TransformerConfig(norm_eps=0.0), ValueError, "norm_eps"),
    (lambda: apply_rope(torch.randn(1, 2, 3, 4), torch.tensor([0, -1, 2])), ValueError, "positions"),
    (lambda: apply_rope(torch.randn(1, 2, 3, 4), torch.arange(3.0)), TypeError, "positions"),
    (lambda: apply_rope(torch.randn(1, 2, 0, 4), torch.arange(0)), ValueError, "`x`"),
])
def test_second_probe_round_is_refused_by_name(call, err, arg):
    with pytest.raises(err, match=arg):
        call()


def test_dropout_switch_is_resolved_at_build():
    """p = 0: training and evaluation give the same output; p > 0: training drops, eval does
    not (the oracle is the block's own eval output and a second training call)."""
    torch.manual_seed(0)
    x = torch.randn(2, 7, 32)
    still = TransformerBlock(TransformerConfig(d_model=32, n_head=4, dropout=0.0))
    assert torch.equal(still.train()(x), still.eval()(x))
    noisy = TransformerBlock(TransformerConfig(d_model=32, n_head=4, dropout=0.3))
    noisy.train()
    assert not torch.allclose(noisy(x), noisy(x))
    noisy.eval()
    assert torch.equal(noisy(x), noisy(x))


# Issue 31: NaN and inf are refused at the functional entry points, by name; the modules the
# blocks run on every forward call the unchecked kernels.
_NAN, _INF = float("nan"), float("inf")


def _with(t, value, at=(0, 1)):
    t = t.clone()
    t[at] = value
    return t


@pytest.mark.parametrize("value", [_NAN, _INF, -_INF])
@pytest.mark.parametrize("call, arg", [
    (lambda b: layer_norm(_with(torch.randn(3, 4), b), torch.ones(4), torch.zeros(4)), "`x`"),
    (lambda b: layer_norm(torch.randn(3, 4), _with(torch.ones(4), b, 1), torch.zeros(4)), "`gamma`"),
    (lambda b: layer_norm(torch.randn(3, 4), torch.ones(4), _with(torch.zeros(4), b, 2)), "`beta`"),
    (lambda b: rms_norm(_with(torch.randn(3, 4), b), torch.ones(4)), "`x`"),
    (lambda b: rms_norm(torch.randn(3, 4), _with(torch.ones(4), b, 3)), "`gamma`"),
    (lambda b: apply_rope(_with(torch.randn(1, 2, 3, 4), b, (0, 1, 2, 3)), torch.arange(3)), "`x`"),
    (lambda b: apply_rope(_with(torch.randn(1, 2, 3, 4), b, (0, 0, 0, 0)), torch.arange(3),
                          interleaved=True), "`x`"),
])
def test_non_finite_inputs_are_refused_by_name(call, arg, value):
    assert not math.isfinite(value)
    with pytest.raises(ValueError, match=arg + " holds NaN or inf"):
        call(value)


def test_rotary_module_skips_the_entry_check_and_equals_apply_rope(monkeypatch):
    import course_llm.positions as positions
    calls = []
    real = positions.check_tensor
    monkeypatch.setattr(positions, "check_tensor",
                        lambda *a, **kw: calls.append(kw.get("finite")) or real(*a, **kw))
    x, pos = torch.randn(2, 3, 5, 8), torch.arange(5)
    for interleaved in (False, True):
        rope = RotaryEmbedding(8, interleaved=interleaved)
        calls.clear()
        got = rope(x, pos)
        assert calls == []  # the module's forward ran no entry check
        # oracle: the explicit rotation matrix of each position
        R = torch.stack([rope_rotation_matrix(p, 8, dtype=torch.float32) for p in range(5)])
        if not interleaved:  # pairs (k, k + d/2): permute to (2k, 2k + 1) and back
            perm = torch.arange(8).view(2, 4).T.flatten()
            want = (R @ x[..., perm, None])[..., 0][..., perm.argsort()]
        else:
            want = (R @ x[..., None])[..., 0]
        assert torch.allclose(got, want, atol=1e-5)
        assert torch.equal(got, apply_rope(x, pos, interleaved=interleaved))


def test_the_block_forward_runs_no_finite_check(monkeypatch):
    """The blocks' LayerNorm/RMSNorm, attention and RoPE never take the finite pass."""
    import course_llm.attention as attention
    import course_llm.norms as norms
    import course_llm.positions as positions
    seen = []
    for mod in (attention, norms, positions):
        real = mod.check_tensor
        monkeypatch.setattr(mod, "check_tensor", lambda *a, real=real, **kw: (
            seen.append(a[0]) if kw.get("finite") else None) or real(*a, **kw))
    for norm, position in (("layer", "learned"), ("rms", "rope")):
        block = TransformerBlock(TransformerConfig(d_model=16, n_head=4, n_kv_head=2, causal=True,
                                                   norm=norm, position=position))
        block(torch.randn(2, 5, 16)).sum().backward()
    assert seen == []

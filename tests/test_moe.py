"""Tests of course_llm.moe against oracles: the course's dense FFNs with the same weights,
a per-token loop written from the formula, closed forms of the losses, and counting by hand."""
import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from course_llm.gpt import GPT
from course_llm.gpt_config import GPTConfig, count_parameters
from course_llm.feedforward import GLU, MLP
from course_llm.layers import TransformerBlock, TransformerConfig
from course_llm.moe import (Experts, MoE, MoEFeedForward, capacity_mask, expert_capacity,
                            load_balancing_loss, moe_ffn, route, router_z_loss)


def expert_by_hand(moe, i, x, act=F.silu):
    """Expert i of `moe` with F.linear on its weights (does not call Experts.forward)."""
    e = moe.experts
    h = act(F.linear(x, e.w1[i]))
    if e.glu:
        h = h * F.linear(x, e.v[i])
    return F.linear(h, e.w2[i])


def moe_per_token(moe, x, capacity=None):
    """The brute-force oracle: one token at a time, slots counted choice by choice."""
    x = x.reshape(-1, moe.d_model)
    k, E = moe.top_k, moe.n_expert
    choices = []
    for x_t in x:
        p = torch.softmax(F.linear(x_t, moe.router.weight).double(), -1)
        order = sorted(range(E), key=lambda i: -p[i].item())[:k]
        g = [p[i] for i in order]
        if moe.renormalize:
            g = [gi / sum(g) for gi in g]
        choices.append(list(zip(order, g)))
    used = [0] * E
    y = torch.zeros_like(x, dtype=torch.float64)
    dropped = 0
    for rank in range(k):                                  # first choices before second ones
        for t, x_t in enumerate(x):
            i, g = choices[t][rank]
            if capacity is not None and used[i] >= capacity:
                dropped += 1
                continue
            used[i] += 1
            y[t] += g * expert_by_hand(moe, i, x_t[None])[0].double()
    return y, used, dropped


def test_one_expert_top_1_is_the_dense_glu_ffn():
    torch.manual_seed(0)
    glu = GLU(16, 40, activation="silu")
    moe = MoE(16, 40, n_expert=1, top_k=1)
    with torch.no_grad():
        for name in ("w1", "v", "w2"):
            getattr(moe.experts, name)[0] = getattr(glu, name).weight
    x = torch.randn(3, 5, 16)
    y, aux = moe(x)
    torch.testing.assert_close(y, glu(x), atol=1e-6, rtol=1e-5)
    assert aux["load"].tolist() == [15] and aux["balance"].item() == pytest.approx(1.0)


def test_one_expert_without_glu_is_the_dense_mlp_without_biases():
    torch.manual_seed(1)
    mlp = MLP(8, 32, activation="gelu", bias=False)
    moe = MoE(8, 32, n_expert=1, top_k=1, glu=False, activation="gelu")
    with torch.no_grad():
        moe.experts.w1[0] = mlp.w1.weight
        moe.experts.w2[0] = mlp.w2.weight
    x = torch.randn(4, 8)
    torch.testing.assert_close(moe(x)[0], mlp(x), atol=1e-6, rtol=1e-5)
    assert moe.experts.v is None


def test_all_experts_with_equal_router_logits_average_the_experts():
    torch.manual_seed(2)
    moe = MoE(12, 24, n_expert=4, top_k=4)
    with torch.no_grad():
        moe.router.weight.zero_()                          # every logit 0: gates 1/4 each
    x = torch.randn(6, 12)
    y, _ = moe(x)
    mean = torch.stack([expert_by_hand(moe, i, x) for i in range(4)]).mean(0)
    torch.testing.assert_close(y, mean, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("top_k, capacity_factor", [(1, None), (2, None), (3, None), (1, 1.0),
                                                    (2, 0.5), (2, 1.25)])
def test_vectorised_dispatch_equals_the_per_token_loop(top_k, capacity_factor):
    torch.manual_seed(3 + top_k)
    moe = MoE(10, 20, n_expert=4, top_k=top_k, capacity_factor=capacity_factor)
    with torch.no_grad():
        moe.router.weight.mul_(5)                          # skewed routing: capacity binds
    x = torch.randn(2, 9, 10)
    y, aux = moe(x)
    cap = None if capacity_factor is None else math.ceil(capacity_factor * 18 * top_k / 4)
    y_ref, used, dropped = moe_per_token(moe, x, cap)
    torch.testing.assert_close(y.reshape(-1, 10).double(), y_ref, atol=1e-5, rtol=1e-4)
    assert aux["kept"].tolist() == used and aux["dropped"].item() == dropped
    assert aux["load"].sum().item() == 18 * top_k == sum(used) + dropped


def test_top_1_gates_are_the_raw_probabilities_and_top_k_gates_sum_to_one():
    logits = torch.randn(5, 6)
    p = logits.softmax(-1)
    _, g1, e1 = route(logits, 1)
    torch.testing.assert_close(g1[:, 0], p.max(-1).values)
    _, g2, e2 = route(logits, 3)
    torch.testing.assert_close(g2.sum(-1), torch.ones(5))
    assert (e1[:, 0] == p.argmax(-1)).all()
    _, g3, _ = route(logits, 3, renormalize=False)
    torch.testing.assert_close(g3, p.topk(3).values)


def test_capacity_drops_the_overflow_and_the_residual_carries_those_tokens():
    torch.manual_seed(4)
    moe = MoE(8, 16, n_expert=4, top_k=1, capacity_factor=1.0)
    with torch.no_grad():
        moe.router.weight.zero_()
        moe.router.weight[0, 0] = 50.0                     # every token with x_0 > 0 picks expert 0
    x = torch.randn(12, 8)
    x[:, 0] = x[:, 0].abs() + 0.5
    y, aux = moe(x)                                        # capacity ceil(12 / 4) = 3
    assert aux["load"].tolist() == [12, 0, 0, 0]
    assert aux["kept"].tolist() == [3, 0, 0, 0] and aux["dropped"].item() == 9
    assert (y[3:] == 0).all() and (y[:3] != 0).any()       # the first three tokens win
    cfg = TransformerConfig(d_model=8, n_head=2, ffn="glu", activation="silu", bias=False,
                            norm="rms")
    block = TransformerBlock(cfg, make_ffn=moe_ffn(4, 1, capacity_factor=1.0)).eval()
    with torch.no_grad():
        block.ffn.router.weight.zero_()
        block.ffn.router.weight[0, 0] = 50.0
        xb = torch.randn(1, 12, 8)
        h = xb + block.attn(block.norm1(xb))                 # after the attention sub-layer
        out = block(xb)
    assert block.ffn.aux["dropped"].item() > 0
    moe_out = block.ffn(block.norm2(h))
    routed = (moe_out[0] != 0).any(-1)
    torch.testing.assert_close(out[0, ~routed], h[0, ~routed])        # dropped: residual only
    assert (~routed).sum().item() == block.ffn.aux["dropped"].item()


def test_capacity_mask_and_expert_capacity_count_by_hand():
    experts = torch.tensor([[0, 1], [0, 2], [1, 0], [0, 1]])
    assert capacity_mask(experts, 3, 2).tolist() == [[True, True], [True, True],
                                                     [True, False], [False, False]]
    assert capacity_mask(experts, 3, 0).sum() == 0 and capacity_mask(experts, 3, 8).all()
    assert expert_capacity(64, 8, 2, 1.25) == 20 and expert_capacity(7, 2, 1, 1.0) == 4


def test_gradient_reaches_only_the_selected_experts():
    torch.manual_seed(5)
    moe = MoE(8, 16, n_expert=4, top_k=1)
    with torch.no_grad():
        moe.router.weight.zero_()
        moe.router.weight[0, 0] = 20.0                     # x_0 > 0 -> expert 0
        moe.router.weight[2, 0] = -20.0                    # x_0 < 0 -> expert 2
    x = torch.randn(10, 8)
    x[:5, 0], x[5:, 0] = 1.0, -1.0
    y, aux = moe(x)
    assert aux["load"].tolist() == [5, 0, 5, 0]
    y.pow(2).sum().backward()
    for name in ("w1", "v", "w2"):
        grad = getattr(moe.experts, name).grad
        norms = grad.flatten(1).norm(dim=1)
        assert norms[0] > 0 and norms[2] > 0 and norms[1] == 0 and norms[3] == 0, name
    assert moe.router.weight.grad.abs().sum() > 0          # top-1 gate p_i(x) is differentiable


def test_aux_losses_match_their_closed_forms():
    torch.manual_seed(6)
    moe = MoE(8, 16, n_expert=3, top_k=2)
    x = torch.randn(20, 8)
    _, aux = moe(x)
    assert set(aux) == {"balance", "z", "load", "kept", "dropped"}
    logits = F.linear(x, moe.router.weight).double()
    p = logits.softmax(-1)
    top = p.topk(2, dim=-1).indices
    f = torch.tensor([(top == i).sum().item() / 40 for i in range(3)], dtype=torch.float64)
    assert aux["balance"].item() == pytest.approx(3 * (f * p.mean(0)).sum().item(), rel=1e-5)
    z = torch.stack([torch.log(torch.exp(r).sum()) ** 2 for r in logits]).mean()
    assert aux["z"].item() == pytest.approx(z.item(), rel=1e-5)
    uniform = torch.full((8, 4), 0.25)
    assert load_balancing_loss(uniform, torch.arange(8)[:, None] % 4).item() == pytest.approx(1.0)
    collapsed = torch.tensor([[1.0, 0.0]] * 4)             # everything on one expert: E
    assert load_balancing_loss(collapsed, torch.zeros(4, 1, dtype=torch.long)).item() == 2.0
    assert router_z_loss(torch.zeros(2, 5)).item() == pytest.approx(math.log(5) ** 2)


def test_gpt_with_one_expert_equals_the_dense_gpt_and_adds_the_aux_loss_in_training():
    torch.manual_seed(7)
    kw = dict(vocab_size=30, max_len=16, n_layer=2, d_model=16, n_head=2, n_kv_head=1)
    dense = GPT(GPTConfig.llama_style(**kw)).eval()
    moe = GPT(GPTConfig.llama_style(**kw), make_ffn=moe_ffn(1, 1)).eval()
    state = dense.state_dict()
    with torch.no_grad():
        for name, p in moe.named_parameters():
            if ".ffn.experts." in name:                    # blocks.0.ffn.experts.w1[0] <-
                p[0] = state[name.replace("experts.", "") + ".weight"]   # blocks.0.ffn.w1.weight
            elif ".ffn.router" not in name:
                p.copy_(state[name])
    idx = torch.randint(0, 30, (2, 12))
    logits_d, loss_d = dense(idx, idx)
    logits_m, loss_m = moe(idx, idx)
    torch.testing.assert_close(logits_m, logits_d, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(loss_m, loss_d)                          # eval: cross-entropy only
    moe.train()
    _, loss_train = moe(idx, idx)
    aux = sum(0.01 * b.ffn.aux["balance"] + 0.001 * b.ffn.aux["z"] for b in moe.blocks)
    torch.testing.assert_close(loss_train, F.cross_entropy(logits_m.flatten(0, 1), idx.flatten()) + aux)
    assert dense.aux_loss().item() == 0.0


@pytest.mark.parametrize("style, glu", [("llama_style", True), ("gpt2_style", False)])
def test_experts_and_router_replace_the_dense_ffn_parameters(style, glu):
    cfg = getattr(GPTConfig, style)(vocab_size=40, n_layer=2, d_model=16, n_head=2)
    model, dense = GPT(cfg, make_ffn=moe_ffn(3, 2)), GPT(cfg)
    d, d_ff = cfg.d_model, cfg.block_config().hidden_dim
    n_mats = 3 if glu else 2
    dense_ffn = n_mats * d * d_ff + (0 if glu else d_ff + d)              # biases in gpt2 style
    per_layer = 3 * n_mats * d * d_ff + d * 3                             # 3 experts + router
    assert model.num_parameters() == dense.num_parameters() + cfg.n_layer * (per_layer - dense_ffn)
    assert (model.blocks[0].ffn.experts.v is not None) == glu
    with pytest.raises(ValueError, match="dense"):
        model.to_hf()



@pytest.mark.parametrize("n_expert, top_k", [(4, 1), (8, 2)])
def test_a_mixture_costs_k_dense_ffns_plus_the_router_in_counted_flops(n_expert, top_k):
    """Chapter 19's accounting, against PyTorch's FLOP counter: a token pays for top_k
    experts of the dense width and the router's d x E product, whatever the routing."""
    from torch.utils.flop_counter import FlopCounterMode

    torch.manual_seed(3)
    kw = dict(vocab_size=50, max_len=16, n_layer=2, d_model=16, n_head=2, n_kv_head=1)
    d_ff = 24
    dense = GPT(GPTConfig.llama_style(**kw, d_ff=top_k * d_ff)).eval()
    moe = GPT(GPTConfig.llama_style(**kw, d_ff=d_ff), make_ffn=moe_ffn(n_expert, top_k)).eval()
    idx = torch.randint(0, 50, (3, 16))

    def counted(model):
        with FlopCounterMode(display=False) as counter, torch.no_grad():
            model(idx)
        return counter.get_total_flops()

    router = 2 * idx.numel() * kw["d_model"] * n_expert * kw["n_layer"]
    assert counted(moe) == counted(dense) + router

def test_defaults_stay_dense_and_the_block_knows_no_experts():
    import ast
    import course_llm.gpt as gpt_module
    import course_llm.layers as layers_module

    cfg = GPTConfig.gpt2_style()
    assert isinstance(GPT(cfg).blocks[0].ffn, MLP)
    assert isinstance(TransformerBlock(TransformerConfig(ffn="glu")).ffn, GLU)
    for module in (gpt_module, layers_module):                            # issue #32 item 4
        tree = ast.parse(Path(module.__file__).read_text())
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert not {m for m in imported if m and m.endswith("moe")}, module.__name__
    with pytest.raises(TypeError, match="make_ffn"):
        TransformerBlock(TransformerConfig(), make_ffn="moe")


@pytest.mark.parametrize("kwargs, error", [
    (dict(n_expert=4, top_k=5), ValueError),
    (dict(n_expert=4, top_k=0), ValueError),
    (dict(n_expert=0, top_k=1), ValueError),
    (dict(n_expert=-2, top_k=1), ValueError),
    (dict(n_expert=2.0, top_k=1), TypeError),
    (dict(n_expert=4, top_k=1, capacity_factor=0.0), ValueError),
    (dict(n_expert=4, top_k=1, capacity_factor=-1.0), ValueError),
    (dict(n_expert=4, top_k=1, capacity_factor=float("nan")), ValueError),
    (dict(n_expert=4, top_k=1, activation="tanh"), ValueError),
    (dict(n_expert=4, top_k=1, glu="yes"), TypeError),
])
def test_bad_arguments_are_rejected(kwargs, error):
    with pytest.raises(error):
        MoE(8, 16, **kwargs)


@pytest.mark.parametrize("x", [torch.randn(8), torch.randn(2, 3, 7), torch.zeros(0, 8),
                               torch.ones(2, 8, dtype=torch.long), [[0.0] * 8]])
def test_bad_inputs_are_rejected(x):
    with pytest.raises((TypeError, ValueError), match="`x`"):
        MoE(8, 16, n_expert=2, top_k=1)(x)


@pytest.mark.parametrize("args, kwargs", [((2, 3), {}), ((-1, 1), {}), ((2, 0), {}),
                                          ((2, 1), dict(capacity_factor=float("nan"))),
                                          ((2, 1), dict(balance_loss_coef=-0.1)),
                                          ((2, 1), dict(z_loss_coef=float("inf")))])
def test_bad_factories_are_rejected(args, kwargs):
    with pytest.raises(ValueError):
        moe_ffn(*args, **kwargs)


def test_bad_helper_inputs_are_rejected():
    with pytest.raises(ValueError, match="top_k"):
        route(torch.randn(3, 4), 5)
    with pytest.raises(ValueError, match="experts"):
        capacity_mask(torch.tensor([[0], [4]]), 4, 2)
    with pytest.raises(ValueError, match="capacity"):
        capacity_mask(torch.tensor([[0]]), 4, -1)
    with pytest.raises(ValueError, match="experts"):
        load_balancing_loss(torch.full((3, 2), 0.5), torch.zeros(2, 1, dtype=torch.long))
    with pytest.raises(ValueError, match="capacity_factor"):
        expert_capacity(8, 2, 1, float("nan"))
    with pytest.raises(ValueError, match="d_ff"):
        Experts(2, 8, 0)


def test_moe_gpt_generates_the_same_tokens_with_and_without_the_kv_cache():
    from course_llm.generate import generate
    torch.manual_seed(8)
    model = GPT(GPTConfig.llama_style(vocab_size=20, max_len=24, n_layer=2, d_model=16, n_head=2,
                                      n_kv_head=1), make_ffn=moe_ffn(3, 2)).eval()
    idx = torch.randint(0, 20, (2, 4))
    cached = generate(model, idx, 10, temperature=0, use_cache=True)
    uncached = generate(model, idx, 10, temperature=0, use_cache=False)
    assert torch.equal(cached, uncached)


NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize("bad", [NAN, INF, -INF])
def test_router_rejects_nan_and_inf_logits_and_inputs(bad):
    logits = torch.randn(4, 3)
    logits[2, 1] = bad
    with pytest.raises(ValueError, match="`logits` holds NaN or inf"):
        route(logits, 1)
    with pytest.raises(ValueError, match="`logits` holds NaN or inf"):
        router_z_loss(logits)
    probs = torch.full((4, 3), 1 / 3)
    probs[0, 0] = bad
    with pytest.raises(ValueError, match="`probs` holds NaN or inf"):
        load_balancing_loss(probs, torch.zeros(4, 1, dtype=torch.long))
    moe = MoE(8, 16, n_expert=3, top_k=1)
    x = torch.randn(2, 5, 8)
    x[1, 3, 0] = bad
    with pytest.raises(ValueError, match="`x` holds NaN or inf"):
        moe(x)


def test_nan_router_weights_are_caught_at_the_logits():
    # without the check, topk ranks NaN first and sends every token to one expert silently
    moe = MoE(8, 16, n_expert=4, top_k=2)
    with torch.no_grad():
        moe.router.weight[1, 0] = float("nan")
    with pytest.raises(ValueError, match="`logits` holds NaN or inf"):
        moe(torch.randn(3, 8))
    nan_logits = torch.tensor([[0.0, float("nan"), 1.0]])
    assert torch.isnan(nan_logits.softmax(-1)).all()        # what the check guards against


def test_feed_forward_returns_y_and_keeps_the_weighted_aux_loss():
    torch.manual_seed(9)
    ffn = MoEFeedForward(8, 16, n_expert=3, top_k=2, balance_loss_coef=0.1, z_loss_coef=0.02)
    assert ffn.aux is None and ffn.aux_loss is None
    x = torch.randn(2, 6, 8)
    y = ffn(x)
    y_ref, _, _ = moe_per_token(ffn, x)                    # the brute-force oracle above
    torch.testing.assert_close(y.reshape(-1, 8).double(), y_ref, atol=1e-5, rtol=1e-4)
    logits = F.linear(x.reshape(-1, 8), ffn.router.weight).double()
    p = logits.softmax(-1)
    top = p.topk(2, dim=-1).indices
    f = torch.stack([(top == i).double().mean() for i in range(3)])  # share of the 2N picks
    balance = 3 * (f * p.mean(0)).sum()
    z = (torch.logsumexp(logits, -1) ** 2).mean()
    assert ffn.aux_loss.item() == pytest.approx((0.1 * balance + 0.02 * z).item(), rel=1e-5)
    ffn.aux_loss.backward()                                # differentiable through P and z
    assert ffn.router.weight.grad.abs().sum() > 0


def test_factory_builds_the_experts_of_the_block_config():
    cfg = TransformerConfig(d_model=16, n_head=2, ffn="glu", activation="silu", d_ff=40,
                            bias=False)
    ffn = moe_ffn(1, 1)(cfg)
    assert isinstance(ffn, MoEFeedForward) and ffn.experts.w1.shape == (1, 40, 16)
    glu = GLU(16, 40, activation="silu")                   # one expert, top-1: the dense FFN
    with torch.no_grad():
        for name in ("w1", "v", "w2"):
            getattr(ffn.experts, name)[0] = getattr(glu, name).weight
    x = torch.randn(2, 5, 16)
    torch.testing.assert_close(ffn(x), glu(x), atol=1e-6, rtol=1e-5)
    mlp_cfg = TransformerConfig(d_model=8, n_head=2, ffn="mlp", activation="gelu")
    made = moe_ffn(4, 2, capacity_factor=1.25, balance_loss_coef=0.0)(mlp_cfg)
    assert made.experts.v is None and made.experts.w1.shape == (4, mlp_cfg.hidden_dim, 8)
    assert made.capacity_factor == 1.25 and made.balance_loss_coef == 0.0
    assert made.top_k == 2 and made.renormalize


def test_init_weights_draws_the_stated_standard_deviations():
    torch.manual_seed(10)
    ffn = MoEFeedForward(64, 128, n_expert=4, top_k=1)
    ffn.init_weights(std=0.02, residual_std=0.005)
    for w, std in ((ffn.router.weight, 0.02), (ffn.experts.w1, 0.02), (ffn.experts.v, 0.02),
                   (ffn.experts.w2, 0.005)):
        assert w.std().item() == pytest.approx(std, rel=0.1) and abs(w.mean()) < std / 10


@pytest.mark.parametrize("call, error, name", [
    (lambda: moe_ffn(0, 1), ValueError, "n_expert"),
    (lambda: moe_ffn(4, 5), ValueError, "top_k"),
    (lambda: moe_ffn(4, 1, capacity_factor=0.0), ValueError, "capacity_factor"),
    (lambda: moe_ffn(4, 1, z_loss_coef=-1.0), ValueError, "z_loss_coef"),
    (lambda: moe_ffn(4, 1)(object()), TypeError, "config"),
    (lambda: MoEFeedForward(8, 16, 2, 1, balance_loss_coef=NAN), ValueError, "balance_loss_coef"),
    (lambda: MoEFeedForward(8, 16, 2, 1).init_weights(-1.0, 0.1), ValueError, "std"),
])
def test_bad_factory_arguments_are_rejected(call, error, name):
    with pytest.raises(error, match=name):
        call()

"""Tests of course_llm.lora against closed forms and torch built-ins."""
import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from course_llm.gpt import GPT
from course_llm.gpt_config import GPTConfig
from course_llm.lora import LoRALinear, add_lora, lora_parameters, merge_lora
from course_llm.quantize import QuantLinear, dequantize, quantize_model


def small_gpt(style="llama"):
    make = GPTConfig.llama_style if style == "llama" else GPTConfig.gpt2_style
    extra = dict(n_kv_head=2, d_ff=64) if style == "llama" else {}
    torch.manual_seed(0)
    return GPT(make(vocab_size=50, max_len=16, n_layer=2, d_model=32, n_head=4, **extra)).eval()


def perturb(model):
    """Give every B a random value, as training would (at creation B = 0)."""
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, LoRALinear):
                m.lora_B.copy_(torch.randn(m.lora_B.shape, generator=g) * 0.1)


def test_creation_equals_base_exactly():
    lin = nn.Linear(8, 5)
    x = torch.randn(3, 7, 8)
    lora = LoRALinear(lin, r=4, alpha=8, dropout=0.5).train()     # dropout: only the LoRA path
    assert torch.equal(lora(x), lin(x))
    model = small_gpt()
    idx = torch.randint(0, 50, (2, 10))
    ref = model(idx)[0]
    add_lora(model, 4, 8, targets=("q_proj", "v_proj", "w1", "v", "w2", "lm_head"))
    assert torch.equal(model(idx)[0], ref)


def test_effective_weight_by_hand():
    torch.manual_seed(0)
    lin = nn.Linear(6, 4)
    lora = LoRALinear(lin, r=3, alpha=5)
    with torch.no_grad():
        lora.lora_B.normal_()
    A, B, W = lora.lora_A.detach(), lora.lora_B.detach(), lin.weight.detach()
    by_hand = torch.empty(4, 6)
    for i in range(4):                                              # W + (alpha / r) sum_k B_ik A_kj
        for j in range(6):
            by_hand[i, j] = W[i, j] + 5 / 3 * sum(B[i, k] * A[k, j] for k in range(3))
    assert torch.allclose(W + lora.delta_weight().detach(), by_hand, atol=1e-6)
    x = torch.randn(2, 6)
    assert torch.allclose(lora(x), F.linear(x, by_hand, lin.bias), atol=1e-5)


def test_merge_equals_unmerged_on_a_layer():
    lin = nn.Linear(16, 8)
    m = nn.Sequential(lin)
    add_lora(m, r=4, alpha=16, targets=("0",))
    perturb(m)
    x = torch.randn(5, 16)
    before = m(x)
    assert merge_lora(m) == ["0"]
    assert type(m[0]) is nn.Linear
    assert torch.allclose(m(x), before, atol=1e-5)


@pytest.mark.parametrize("style", ["llama", "gpt2"])
def test_merge_equals_unmerged_on_gpt(style):
    model = small_gpt(style)
    keys = list(model.state_dict())
    targets = ("q_proj", "k_proj", "v_proj", "out_proj", "w1", "w2", "lm_head")
    names = add_lora(model, r=4, alpha=8, targets=targets)
    assert len(names) == 2 * 6 + 1
    perturb(model)
    idx = torch.randint(0, 50, (2, 12))
    before = model(idx)[0]
    assert merge_lora(model) == names
    assert torch.allclose(model(idx)[0], before, atol=1e-5)
    assert not any(isinstance(m, LoRALinear) for m in model.modules())
    assert all(type(model.get_submodule(n)) is nn.Linear for n in names)
    assert list(model.state_dict()) == keys


def test_tied_head_is_untied_by_merge():
    model = small_gpt("gpt2")                                       # lm_head tied to tok_emb
    emb = model.tok_emb.weight.detach().clone()
    add_lora(model, r=2, alpha=2, targets=("lm_head",))
    perturb(model)
    merge_lora(model)
    assert torch.equal(model.tok_emb.weight, emb)
    assert model.lm_head.weight is not model.tok_emb.weight


def test_only_lora_parameters_train():
    model = small_gpt()
    names = add_lora(model, r=2, alpha=4)
    assert names == [f"blocks.{i}.attn.{p}" for i in range(2) for p in ("q_proj", "v_proj")]
    trainable = [p for p in model.parameters() if p.requires_grad]
    assert {id(p) for p in trainable} == {id(p) for p in lora_parameters(model)}
    assert len(trainable) == 2 * len(names)
    # A is (r, in), B is (out, r); llama_style with 2 of 4 heads for keys/values: v_proj is 32 -> 16
    assert sum(p.numel() for p in trainable) == 2 * (2 * 32 + 32 * 2) + 2 * (2 * 32 + 16 * 2)


def test_gradients_at_step_zero_closed_form():
    torch.manual_seed(0)
    lin = nn.Linear(6, 4)
    lora = LoRALinear(lin, r=3, alpha=6)
    x, g = torch.randn(5, 6), torch.randn(5, 4)
    (lora(x) * g).sum().backward()                                  # dL/dy = g
    assert torch.equal(lora.lora_A.grad, torch.zeros(3, 6))         # dL/dA = s B^T g^T x, B = 0
    want_B = 6 / 3 * g.T @ (x @ lora.lora_A.detach().T)             # dL/dB = s g^T (x A^T)
    assert torch.allclose(lora.lora_B.grad, want_B, atol=1e-5)
    assert lora.lora_B.grad.abs().sum() > 0
    assert lin.weight.grad is None and lin.bias.grad is None


def test_dropout_only_on_the_update():
    torch.manual_seed(0)
    lin = nn.Linear(8, 8)
    lora = LoRALinear(lin, r=2, alpha=2, dropout=0.5)
    perturb(nn.Sequential(lora))
    x = torch.randn(4, 8)
    lora.eval()
    assert torch.allclose(lora(x), lin(x) + x @ lora.delta_weight().T, atol=1e-6)
    lora.train()
    assert not torch.allclose(lora(x), lora.eval()(x))


def test_qlora_base():
    torch.manual_seed(0)
    model = small_gpt()
    quantize_model(model, 4, 16, skip=("lm_head",))
    add_lora(model, r=2, alpha=4, targets=("q_proj", "w2"))
    q = model.blocks[0].attn.q_proj
    assert isinstance(q.base, QuantLinear)
    assert all(not p.requires_grad for p in q.base.parameters())
    idx = torch.randint(0, 50, (2, 8))
    ref = model(idx)[0]
    perturb(model)
    x = torch.randn(3, 32)
    want = F.linear(x, dequantize(q.base.qweight) + q.delta_weight().detach())
    assert torch.allclose(q(x), want, atol=1e-5)
    before = model(idx)[0]
    assert not torch.allclose(before, ref)
    merge_lora(model)
    assert type(model.blocks[0].attn.q_proj) is nn.Linear
    assert torch.allclose(model(idx)[0], before, atol=1e-5)


def test_training_moves_only_lora():
    model = small_gpt()
    frozen = {k: v.clone() for k, v in model.state_dict().items()}
    add_lora(model, r=2, alpha=4, targets=("q_proj", "v_proj", "w2"))
    opt = torch.optim.SGD(lora_parameters(model), lr=0.1)
    idx = torch.randint(0, 50, (4, 12))
    for _ in range(3):
        opt.zero_grad()
        model(idx[:, :-1], idx[:, 1:])[1].backward()
        opt.step()
    assert any(m.lora_B.abs().sum() > 0 for m in model.modules() if isinstance(m, LoRALinear))
    state = model.state_dict()
    for k, v in frozen.items():
        k2 = k if k in state else k.replace(".weight", ".base.weight").replace(".bias", ".base.bias")
        assert torch.equal(state[k2], v), k


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(r=0), ValueError, "`r`"),
    (dict(r=-2), ValueError, "`r`"),
    (dict(r=2.0), TypeError, "`r`"),
    (dict(alpha=0), ValueError, "`alpha`"),
    (dict(alpha=-1.0), ValueError, "`alpha`"),
    (dict(alpha=float("nan")), ValueError, "`alpha`"),
    (dict(alpha=float("inf")), ValueError, "`alpha`"),
    (dict(dropout=1.0), ValueError, "`dropout`"),
    (dict(dropout=-0.1), ValueError, "`dropout`"),
    (dict(dropout=float("nan")), ValueError, "`dropout`"),
])
def test_bad_hyperparameters(kwargs, error, match):
    args = dict(r=2, alpha=4.0, dropout=0.0) | kwargs
    with pytest.raises(error, match=match):
        LoRALinear(nn.Linear(4, 4), **args)
    with pytest.raises(error, match=match):
        add_lora(small_gpt(), **args)


def test_bad_base():
    for base in (nn.Conv1d(4, 4, 1), nn.Embedding(4, 4), torch.zeros(4, 4)):
        with pytest.raises(TypeError, match="`base`"):
            LoRALinear(base, r=2, alpha=2)
    with pytest.raises(TypeError, match="already a LoRALinear"):
        LoRALinear(LoRALinear(nn.Linear(4, 4), r=2, alpha=2), r=2, alpha=2)


def test_bad_targets():
    model = small_gpt()
    with pytest.raises(ValueError, match=r"\['qproj'\] match no module.*q_proj"):
        add_lora(model, 2, 4, targets=("q_proj", "qproj"))
    with pytest.raises(ValueError, match="not a linear layer"):
        add_lora(model, 2, 4, targets=("attn",))
    for bad in ("q_proj", (), ("q_proj", 3), None):
        with pytest.raises(TypeError, match="`targets`"):
            add_lora(model, 2, 4, targets=bad)
    assert all(p.requires_grad for p in model.parameters())        # nothing changed on failure
    with pytest.raises(TypeError, match="`model`"):
        add_lora(nn.Linear(4, 4).weight, 2, 4)


def test_twice_and_merge_without_lora():
    model = small_gpt()
    with pytest.raises(ValueError, match="nothing to merge"):
        merge_lora(model)
    add_lora(model, 2, 4)
    with pytest.raises(ValueError, match="already holds LoRA"):
        add_lora(model, 2, 4, targets=("k_proj",))
    with pytest.raises(TypeError, match="`model`"):
        lora_parameters("model")

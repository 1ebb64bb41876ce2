"""course_llm.gpt against independent oracles: Hugging Face GPT2LMHeadModel / LlamaForCausalLM
with the same (random) weights, F.cross_entropy, the published parameter counts, and the
statistics of a Gaussian embedding matrix."""

import math

import pytest
import torch
from concat_cache import ConcatCache
import torch.nn.functional as F

from course_llm.gpt import GPT, GPTClassifier, causal_lm_loss
from course_llm.gpt_config import GPTConfig, PRESETS, count_parameters

transformers = pytest.importorskip("transformers")
torch.set_num_threads(1)

NO_SPECIAL = dict(bos_token_id=None, eos_token_id=None)


def gpt2(tie=True, activation="gelu_new", n_inner=None, seed=0):
    torch.manual_seed(seed)
    cfg = transformers.GPT2Config(vocab_size=97, n_positions=32, n_embd=48, n_layer=2, n_head=4,
                                  n_inner=n_inner, activation_function=activation, layer_norm_epsilon=1e-5,
                                  tie_word_embeddings=tie, **NO_SPECIAL)
    return transformers.GPT2LMHeadModel(cfg).eval()


def llama(n_kv_head=2, tie=False, rope_theta=10000.0, head_dim=None, seed=0):
    torch.manual_seed(seed)
    cfg = transformers.LlamaConfig(vocab_size=97, hidden_size=64, intermediate_size=112, num_hidden_layers=2,
                                   num_attention_heads=8, num_key_value_heads=n_kv_head, head_dim=head_dim,
                                   max_position_embeddings=32, rms_norm_eps=1e-6, rope_theta=rope_theta,
                                   tie_word_embeddings=tie, pad_token_id=None, **NO_SPECIAL)
    return transformers.LlamaForCausalLM(cfg).eval()


def perturb(model, seed=1):
    """Random norms and biases too (HF initialises them to 1 and 0, which would hide mapping bugs)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1:
                p.copy_(torch.randn(p.shape, generator=g) * 0.5 + (1.0 if "norm" in name or "ln" in name else 0.0))
    return model


HF_MODELS = {
    "gpt2 tied": lambda: gpt2(tie=True),
    "gpt2 untied": lambda: gpt2(tie=False),
    "gpt2 exact gelu, d_ff=80": lambda: gpt2(activation="gelu", n_inner=80),
    "llama gqa 8/2 untied": lambda: llama(n_kv_head=2),
    "llama mqa 8/1 tied, theta=5e5": lambda: llama(n_kv_head=1, tie=True, rope_theta=5e5),
    "llama mha 8/8 untied, theta=1e6": lambda: llama(n_kv_head=8, rope_theta=1e6),
    "llama head_dim 16 (H d_head != d)": lambda: llama(n_kv_head=4, head_dim=16),
}


@pytest.mark.parametrize("name", list(HF_MODELS))
def test_logits_equal_hugging_face(name):
    hf = perturb(HF_MODELS[name]())
    ours = GPT.from_hf(hf).eval()
    idx = torch.randint(0, 97, (3, 32), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        want = hf(idx).logits
        got, _ = ours(idx)
    assert got.shape == want.shape == (3, 32, 97)
    assert (got - want).abs().max().item() < 1e-5
    assert ours.config.tie_weights == hf.config.tie_word_embeddings
    assert (ours.lm_head.weight is ours.tok_emb.weight) == ours.config.tie_weights
    assert ours.num_parameters() == hf.num_parameters()


@pytest.mark.parametrize("name", list(HF_MODELS))
def test_round_trip_to_hf_from_hf(name):
    hf = perturb(HF_MODELS[name]())
    back = GPT.from_hf(hf).to_hf().eval()
    assert type(back) is type(hf)
    sd, sd_back = hf.state_dict(), back.state_dict()
    assert set(sd) == set(sd_back)
    for k in sd:
        assert torch.equal(sd[k], sd_back[k]), k
    idx = torch.randint(0, 97, (2, 16), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        assert torch.equal(back(idx).logits, hf(idx).logits)


@pytest.mark.parametrize("config", [GPTConfig.gpt2_style(vocab_size=97, tie_weights=False),
                                    GPTConfig.llama_style(vocab_size=97, tie_weights=True)])
def test_own_model_to_hf_equal_logits(config):
    torch.manual_seed(4)
    ours = GPT(config).eval()
    hf = ours.to_hf().eval()
    idx = torch.randint(0, 97, (2, 20))
    with torch.no_grad():
        assert (ours(idx)[0] - hf(idx).logits).abs().max().item() < 1e-5


def test_to_hf_rejects_configs_neither_class_expresses():
    with pytest.raises(ValueError, match="gpt2-style"):
        GPT(GPTConfig.gpt2_style(position="rope")).to_hf()


@pytest.mark.parametrize("name", ["gpt2 tied", "llama gqa 8/2 untied"])
def test_loss_with_ignore_index_equals_hugging_face_and_cross_entropy(name):
    hf = perturb(HF_MODELS[name]())
    ours = GPT.from_hf(hf).eval()
    g = torch.Generator().manual_seed(5)
    tokens = torch.randint(0, 97, (3, 24), generator=g)
    labels = tokens.clone()
    labels[0, :7] = -100                                    # e.g. a prompt that is not trained on
    labels[2, 18:] = -100                                   # e.g. padding
    with torch.no_grad():
        hf_out = hf(tokens, labels=labels)
        logits, loss = ours(tokens[:, :-1], targets=labels[:, 1:])       # shifted targets
        full, _ = ours(tokens)
    oracle = F.cross_entropy(hf_out.logits[:, :-1].reshape(-1, 97), labels[:, 1:].reshape(-1), ignore_index=-100)
    assert abs(loss.item() - oracle.item()) < 1e-5
    assert abs(hf_out.loss.item() - oracle.item()) < 1e-5
    assert abs(causal_lm_loss(full, labels).item() - oracle.item()) < 1e-5      # unshifted labels
    # a different ignore_index
    labels7 = torch.where(labels == -100, torch.full_like(labels, 7), labels)
    keep = labels7[:, 1:] != 7
    manual = -F.log_softmax(full[:, :-1], -1).gather(-1, labels7[:, 1:, None])[..., 0][keep].mean()
    assert abs(causal_lm_loss(full, labels7, ignore_index=7).item() - manual.item()) < 1e-5


def test_kv_cache_threading_gives_the_uncached_logits():
    """A minimal cache (concatenating) through `kv_cache`: positions continue from the cache."""
    for config in (GPTConfig.gpt2_style(vocab_size=50, max_len=16),
                   GPTConfig.llama_style(vocab_size=50, max_len=16, n_kv_head=1)):
        torch.manual_seed(6)
        model = GPT(config).double().eval()
        idx = torch.randint(0, 50, (2, 16))
        full, _ = model(idx)
        caches = [ConcatCache() for _ in range(config.n_layer)]
        steps = [model(idx[:, :5], kv_cache=caches)[0]]
        steps += [model(idx[:, t:t + 1], kv_cache=caches)[0] for t in range(5, 16)]
        assert torch.allclose(torch.cat(steps, 1), full, atol=1e-10)
        assert caches[0].k.shape[1] == (config.n_kv_head or config.n_head)        # stores H_kv heads
        with pytest.raises(ValueError, match="max_len=16"):
            model(idx[:, :1], kv_cache=caches)


PUBLISHED = {  # name: published count (exact where the release gives it, else the paper's rounding)
    "gpt2-124m": 124_439_808,        # the released GPT-2 small checkpoint
    "gpt2-1.5b": 1_557_611_200,      # the released GPT-2 XL checkpoint (the paper says 1542M)
    "llama2-7b": 6_738_415_616,      # the released Llama 2 7B checkpoint
    "llama3-8b": 8_030_261_248,      # the released Llama 3 8B checkpoint
}
# the papers' rounded numbers, with half their last digit: 117M is anything in [116.5M, 117.5M)
ROUNDED = {"gpt1": (117e6, 0.5e6), "gpt3-small": (125e6, 0.5e6), "gpt3-175b": (175e9, 0.5e9)}


@pytest.mark.parametrize("name", list(PRESETS))
def test_parameter_counts_match_published_numbers(name):
    config = GPTConfig.preset(name)
    closed = count_parameters(config)["total"]
    if name in PUBLISHED:
        assert closed == PUBLISHED[name]
    else:
        published, half_unit = ROUNDED[name]
        assert published - half_unit <= closed < published + half_unit, (closed, published)
    if closed < 2e9:                                       # allocate nothing: count on the meta device
        with torch.device("meta"):
            model = GPT(config)
        assert model.num_parameters() == closed


@pytest.mark.parametrize("name,hf_kwargs", [
    ("gpt3-small", dict(n_positions=2048)),
    ("gpt2-1.5b", dict(n_embd=1600, n_layer=48, n_head=25)),
])
def test_parameter_count_equals_hugging_face_meta_model(name, hf_kwargs):
    with torch.device("meta"):
        hf = transformers.GPT2LMHeadModel(transformers.GPT2Config(**hf_kwargs, **NO_SPECIAL))
    assert count_parameters(GPTConfig.preset(name))["total"] == hf.num_parameters()


def test_tied_embedding_is_an_approximate_inverse_at_init():
    """A ~ N(0, sigma^2) in R^{d x n}: A^T A / (d sigma^2) -> I; entries off the diagonal ~ 1/sqrt(d)."""
    torch.manual_seed(7)
    d, n = 512, 200
    model = GPT(GPTConfig.gpt2_style(vocab_size=n, d_model=d, n_head=8, n_layer=1))
    assert model.lm_head.weight is model.tok_emb.weight              # B = A^T
    A = model.tok_emb.weight.detach().T.double()                       # (d, n)
    sigma = model.config.init_std
    G = A.T @ A / (d * sigma ** 2)
    off = G - torch.diag(torch.diag(G))
    assert (torch.diag(G) - 1).abs().max().item() < 6 * math.sqrt(2 / d)    # chi^2_d / d: sd sqrt(2/d)
    assert off.abs().max().item() < 6 / math.sqrt(d)                        # sd 1/sqrt(d)
    assert abs(off.std().item() - 1 / math.sqrt(d)) < 0.1 / math.sqrt(d)


@pytest.mark.parametrize("make", [GPTConfig.gpt2_style, GPTConfig.llama_style])
def test_causal_future_tokens_do_not_change_past_logits(make):
    torch.manual_seed(8)
    model = GPT(make(vocab_size=40, max_len=12)).eval()
    a = torch.randint(0, 40, (1, 12))
    b = a.clone()
    b[0, 7:] = (b[0, 7:] + 1) % 40
    with torch.no_grad():
        assert torch.allclose(model(a)[0][:, :7], model(b)[0][:, :7], atol=1e-6)
        assert not torch.allclose(model(a)[0][:, 7:], model(b)[0][:, 7:], atol=1e-3)


def test_bad_inputs_raise_clear_errors():
    model = GPT(GPTConfig.gpt2_style(vocab_size=40, max_len=8))
    with pytest.raises(ValueError, match="max_len=8"):
        model(torch.zeros(1, 9, dtype=torch.long))
    with pytest.raises(ValueError, match="targets"):
        model(torch.zeros(2, 5, dtype=torch.long), targets=torch.zeros(2, 4, dtype=torch.long))
    with pytest.raises(TypeError, match="int dtype"):
        model(torch.zeros(2, 5))
    with pytest.raises(ValueError, match="2 dimensions"):
        model(torch.zeros(5, dtype=torch.long))
    with pytest.raises(ValueError, match="tokens"):
        causal_lm_loss(torch.zeros(2, 5, 40), torch.zeros(2, 4, dtype=torch.long))
    with pytest.raises(ValueError, match="n_layer"):
        GPTConfig(n_layer=0)
    with pytest.raises(ValueError, match="n_kv_head"):
        GPTConfig.llama_style(n_head=4, n_kv_head=3)
    with pytest.raises(ValueError, match="preset"):
        GPTConfig.preset("gpt5")
    with pytest.raises(TypeError, match="GPT2LMHeadModel"):
        GPT.from_hf(torch.nn.Linear(2, 2))


NAN = float("nan")


@pytest.mark.parametrize("bad", [
    lambda: GPT(GPTConfig.gpt2_style(vocab_size=10))(torch.tensor([[10]])),       # id out of range
    lambda: GPT(GPTConfig.gpt2_style(vocab_size=10))(torch.tensor([[-1]])),
    lambda: GPT(GPTConfig.gpt2_style(vocab_size=10))(torch.tensor([[1]]), torch.tensor([[12]])),
    lambda: GPT(GPTConfig.gpt2_style(vocab_size=10))(torch.zeros(0, 3, dtype=torch.long)),
    lambda: GPT(GPTConfig.gpt2_style(vocab_size=10))(torch.tensor([[1]]), torch.tensor([[1]]), ignore_index=0.5),
    lambda: GPTConfig(vocab_size=0),
    lambda: GPTConfig(causal=False),
    lambda: GPTConfig(pre_norm=False),
    lambda: GPTConfig(foo=1),
    lambda: GPTConfig(init_std=NAN),
    lambda: GPTConfig(dropout=NAN),
    lambda: causal_lm_loss(torch.zeros(2, 5, 4), torch.zeros(2, 5, 1, dtype=torch.long)),
    lambda: causal_lm_loss(torch.zeros(2, 5, 4), torch.full((2, 5), 7)),
    lambda: causal_lm_loss(torch.zeros(2, 5, 4, dtype=torch.long), torch.zeros(2, 5, dtype=torch.long)),
    lambda: causal_lm_loss(torch.zeros(2, 1, 4), torch.zeros(2, 1, dtype=torch.long)),
    lambda: count_parameters(GPTConfig().block_config()),
    lambda: GPTClassifier(GPT(GPTConfig.gpt2_style(vocab_size=10)), start_id=10, extract_id=2),
    lambda: GPTClassifier(GPT(GPTConfig.gpt2_style(vocab_size=10)), start_id=1, extract_id=2, n_classes=0),
])
def test_more_bad_inputs_raise_value_or_type_errors(bad):
    with pytest.raises((ValueError, TypeError)):
        bad()


def test_config_is_a_plain_transformer_config_with_gpt2_defaults():
    from dataclasses import fields
    from course_llm.layers import TransformerConfig
    cfg = GPTConfig()
    assert isinstance(cfg, TransformerConfig)
    assert (cfg.d_model, cfg.n_head, cfg.activation, cfg.max_len, cfg.causal) == (768, 12, "gelu_tanh", 1024, True)
    names = [f.name for f in fields(GPTConfig)]
    assert len(names) == len(set(names))                                     # each field declared once
    assert GPTConfig.gpt2_style(max_len=32).max_len == 32
    with pytest.raises(TypeError, match="depth"):                            # unknown fields are refused
        GPTConfig(depth=64)
    # ignored targets are fine, and the loss matches F.cross_entropy
    ids = torch.tensor([[1, 2, 3]])
    assert torch.isfinite(causal_lm_loss(torch.zeros(1, 3, 4), torch.tensor([[1, -100, 3]])))

"""course_llm.gpt_hf against transformers: the config maps and the state-dict maps cover every
parameter exactly (set equality with the state_dict keys of both models), and the models they
build give Hugging Face's logits, in both directions, for GPT-2 and Llama, tied and untied,
with grouped-query attention."""

import pytest
import torch

from course_llm.gpt import GPT
from course_llm.gpt_config import GPTConfig
from course_llm.gpt_hf import config_from_hf, config_to_hf, state_from_hf, state_to_hf

transformers = pytest.importorskip("transformers")
torch.set_num_threads(1)

NO_SPECIAL = {"bos_token_id": None, "eos_token_id": None}


def gpt2(tie):
    return transformers.GPT2Config(vocab_size=61, n_positions=16, n_embd=32, n_layer=2, n_head=4,
                                   tie_word_embeddings=tie, **NO_SPECIAL)


def llama(tie, n_kv_head):
    return transformers.LlamaConfig(vocab_size=61, hidden_size=32, intermediate_size=48,
                                    num_hidden_layers=2, num_attention_heads=4,
                                    num_key_value_heads=n_kv_head, max_position_embeddings=16,
                                    rope_theta=5e4, tie_word_embeddings=tie, pad_token_id=None,
                                    **NO_SPECIAL)


HF_CONFIGS = {
    "gpt2 tied": lambda: gpt2(True),
    "gpt2 untied": lambda: gpt2(False),
    "llama gqa 4/2 untied": lambda: llama(False, 2),
    "llama gqa 4/1 tied": lambda: llama(True, 1),
}


def hf_model(name, seed=0):
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(HF_CONFIGS[name]()).eval()
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():                      # random norms and biases (HF starts them at 1, 0)
        for p in model.parameters():
            if p.dim() == 1:
                p.add_(torch.randn(p.shape, generator=g) * 0.3)
    return model


@pytest.mark.parametrize("name", list(HF_CONFIGS))
def test_maps_cover_every_parameter_exactly(name):
    hf = hf_model(name)
    config = config_from_hf(hf.config)
    mapped = state_from_hf(hf.state_dict(), config)
    assert set(mapped) == set(GPT(config).state_dict())
    back = state_to_hf(mapped, config)
    assert set(back) == set(hf.state_dict())
    for k, v in hf.state_dict().items():     # the reverse map undoes the map exactly
        assert torch.equal(back[k], v), k


@pytest.mark.parametrize("name", list(HF_CONFIGS))
def test_from_hf_and_to_hf_give_hugging_face_logits(name):
    hf = hf_model(name)
    idx = torch.randint(0, 61, (2, 16), generator=torch.Generator().manual_seed(2))
    ours = GPT.from_hf(hf).eval()
    assert ours.config.tie_weights == hf.config.tie_word_embeddings
    assert (ours.lm_head.weight is ours.tok_emb.weight) == ours.config.tie_weights
    with torch.no_grad():
        want = hf(idx).logits
        assert (ours(idx)[0] - want).abs().max().item() < 1e-5
        back = ours.to_hf().eval()
        assert type(back) is type(hf)
        assert torch.equal(back(idx).logits, want)


@pytest.mark.parametrize("config", [
    GPTConfig.gpt2_style(vocab_size=61, max_len=16, tie_weights=False),
    GPTConfig.llama_style(vocab_size=61, max_len=16, n_head=4, n_kv_head=2, tie_weights=True),
])
def test_our_model_to_hf_and_back(config):
    torch.manual_seed(3)
    ours = GPT(config).eval()
    h = config_to_hf(config)
    assert config_to_hf(config_from_hf(h)).to_dict() == h.to_dict()   # the map round-trips
    hf = ours.to_hf().eval()
    idx = torch.randint(0, 61, (2, 12), generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        assert (ours(idx)[0] - hf(idx).logits).abs().max().item() < 1e-5
        assert torch.equal(GPT.from_hf(hf).eval()(idx)[0], ours(idx)[0])


def test_conv1d_weights_are_transposed_and_c_attn_split():
    hf = hf_model("gpt2 untied")
    sd = hf.state_dict()
    mapped = state_from_hf(sd, config_from_hf(hf.config))
    c_attn = sd["transformer.h.0.attn.c_attn.weight"]          # Conv1D: (d, 3d), x @ W
    assert torch.equal(mapped["blocks.0.attn.k_proj.weight"], c_attn[:, 32:64].t())
    assert torch.equal(mapped["blocks.0.ffn.w1.weight"], sd["transformer.h.0.mlp.c_fc.weight"].t())


def test_bad_inputs_raise_clear_errors():
    hf = hf_model("llama gqa 4/2 untied")
    config = config_from_hf(hf.config)
    sd = dict(hf.state_dict())
    with pytest.raises(TypeError, match="GPT2Config or LlamaConfig"):
        config_from_hf(transformers.BertConfig())
    with pytest.raises(TypeError, match="state_dict"):
        state_from_hf([1], config)
    with pytest.raises(ValueError, match="lacks 'model.norm.weight'"):
        state_from_hf({k: v for k, v in sd.items() if k != "model.norm.weight"}, config)
    with pytest.raises(ValueError, match="leaves out"):
        state_from_hf({**sd, "model.extra.weight": torch.zeros(1)}, config)
    with pytest.raises(ValueError, match="lm_head differs"):
        tied = config_from_hf(llama(True, 2))
        state_from_hf(sd, tied)
    with pytest.raises(ValueError, match="gpt2-style"):
        config_to_hf(GPTConfig.gpt2_style(position="rope"))
    with pytest.raises(TypeError, match="GPTConfig"):
        state_to_hf({}, "gpt2")
    with pytest.raises(ValueError, match="lacks"):
        state_to_hf({}, config)

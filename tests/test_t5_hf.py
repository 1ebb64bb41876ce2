"""course_llm.t5_hf: the Hugging Face T5 mapping, against `transformers` itself."""
import pytest
import torch
from transformers import T5Config as HFConfig, T5ForConditionalGeneration

from course_llm.t5 import T5
from course_llm.t5_config import T5Config
from course_llm.t5_hf import config_from_hf, hf_state_names, state_from_hf


def small(**kw):
    return HFConfig(**{**dict(vocab_size=30, d_model=16, d_kv=4, d_ff=24, num_layers=2,
                              num_heads=2, decoder_start_token_id=0, dropout_rate=0.0), **kw})


@pytest.mark.parametrize("kw", [{}, {"feed_forward_proj": "gated-gelu", "tie_word_embeddings": False},
                                {"num_decoder_layers": 3}])
def test_logits_equal_transformers(kw):
    torch.manual_seed(0)
    hf = T5ForConditionalGeneration(small(**kw)).eval()
    ours = T5.from_hf(hf).eval()
    x, y = torch.randint(0, 30, (2, 6)), torch.randint(0, 30, (2, 4))
    with torch.no_grad():
        torch.testing.assert_close(ours(x, y), hf(input_ids=x, decoder_input_ids=y).logits,
                                   atol=1e-5, rtol=0)


@pytest.mark.parametrize("kw", [{}, {"feed_forward_proj": "gated-gelu", "tie_word_embeddings": False}])
def test_state_map_is_a_pure_renaming_that_covers_every_parameter(kw):
    hf = T5ForConditionalGeneration(small(**kw))
    config = config_from_hf(hf.config)
    hf_state = hf.state_dict()
    state = state_from_hf(hf_state, config)
    assert set(state) == set(T5(config).state_dict())                # strict: nothing left out
    for ours, theirs in hf_state_names(config).items():
        assert state[ours] is hf_state[theirs]                        # the same tensors, renamed


def test_bad_inputs_are_named():
    with pytest.raises(TypeError, match="`hf_config` must be a transformers T5Config"):
        config_from_hf(T5Config(vocab_size=10, d_model=8, d_head=4, d_ff=8, n_layer=1,
                                n_decoder_layer=1, n_head=2))
    with pytest.raises(TypeError, match="`model` must be a transformers"):
        T5.from_hf(torch.nn.Linear(2, 2))
    hf = T5ForConditionalGeneration(small()).eval()
    with pytest.raises(ValueError, match="lacks .* parameters"):
        state_from_hf(hf.state_dict(), config_from_hf(small(num_layers=3)))
    with pytest.raises(TypeError, match="`state_dict` must be a dict"):
        state_from_hf([1], config_from_hf(small()))
    state = dict(hf.state_dict())
    state["lm_head.weight"] = state["lm_head.weight"] + 1                     # tied v1.0, untied head
    with pytest.raises(ValueError, match="lm_head differs"):
        state_from_hf(state, config_from_hf(small()))

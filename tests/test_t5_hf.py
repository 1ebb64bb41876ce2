"""course_llm.t5_hf: the Hugging Face T5 mapping, against `transformers` itself."""
import pytest
import torch
from transformers import T5Config as HFConfig, T5ForConditionalGeneration

from course_llm.t5 import T5, T5Config
from course_llm.t5 import config_from_hf as old_config_from_hf, load_hf_weights as old_load
from course_llm.t5_hf import config_from_hf, load_hf_weights


def small(**kw):
    return HFConfig(**{**dict(vocab_size=30, d_model=16, d_kv=4, d_ff=24, num_layers=2,
                              num_heads=2, decoder_start_token_id=0, dropout_rate=0.0), **kw})


def test_old_names_still_work():
    assert old_config_from_hf is config_from_hf and old_load is load_hf_weights


@pytest.mark.parametrize("kw", [{}, {"feed_forward_proj": "gated-gelu", "tie_word_embeddings": False}])
def test_logits_equal_transformers(kw):
    torch.manual_seed(0)
    hf = T5ForConditionalGeneration(small(**kw)).eval()
    ours = load_hf_weights(T5(config_from_hf(hf.config)), hf).eval()
    x, y = torch.randint(0, 30, (2, 6)), torch.randint(0, 30, (2, 4))
    with torch.no_grad():
        torch.testing.assert_close(ours(x, y), hf(input_ids=x, decoder_input_ids=y).logits,
                                   atol=1e-5, rtol=0)


def test_bad_inputs_are_named():
    with pytest.raises(TypeError, match="`h` must be a transformers T5Config"):
        config_from_hf(T5Config(vocab_size=10, d_model=8, d_head=4, d_ff=8, n_layer=1,
                                n_decoder_layer=1, n_head=2))
    hf = T5ForConditionalGeneration(small()).eval()
    with pytest.raises(TypeError, match="`model` must be a transformers"):
        load_hf_weights(T5(config_from_hf(hf.config)), torch.nn.Linear(2, 2))
    other = config_from_hf(small(num_layers=1))
    with pytest.raises(ValueError, match="`m` has 1\\+1 layers"):
        load_hf_weights(T5(other), hf)

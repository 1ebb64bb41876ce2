"""course_llm.t5 against transformers' T5ForConditionalGeneration with the same weights."""
import pytest
import torch
from transformers import T5Config as HFConfig, T5ForConditionalGeneration

from course_llm.t5 import T5, greedy_decode
from course_llm.t5_config import T5Config
from course_llm.relative_bias import relative_position_bucket

CONFIGS = [
    dict(d_model=32, d_kv=8, d_ff=48, num_layers=2, num_heads=4, feed_forward_proj="relu"),            # v1.0, tied
    dict(d_model=32, d_kv=8, d_ff=48, num_layers=2, num_heads=3, feed_forward_proj="gated-gelu",
         tie_word_embeddings=False),                                                                  # v1.1
    dict(d_model=24, d_kv=5, d_ff=40, num_layers=1, num_decoder_layers=3, num_heads=2,
         relative_attention_num_buckets=8, relative_attention_max_distance=16),
]


def _hf(seed, **kw):
    torch.manual_seed(seed)
    cfg = HFConfig(vocab_size=61, dropout_rate=0.0, decoder_start_token_id=0, **kw)
    return T5ForConditionalGeneration(cfg).eval()


@pytest.mark.parametrize("kw", CONFIGS)
@pytest.mark.parametrize("seed", [0, 1])
def test_logits_match_hf(kw, seed):
    hf = _hf(seed, **kw)
    ours = T5.from_hf(hf).eval()
    g = torch.Generator().manual_seed(seed)
    x, y = torch.randint(0, 61, (3, 30), generator=g), torch.randint(0, 61, (3, 25), generator=g)
    am = torch.ones(3, 30, dtype=torch.long)
    am[1, 20:] = 0
    am[2, 5:] = 0
    with torch.no_grad():
        ref = hf(input_ids=x, attention_mask=am, decoder_input_ids=y).logits
        assert (ours(x, y, am) - ref).abs().max() < 1e-5
        ref = hf(input_ids=x, decoder_input_ids=y).logits
        assert (ours(x, y) - ref).abs().max() < 1e-5


@pytest.mark.parametrize("kw", CONFIGS[:2])
def test_cached_greedy_matches_uncached_and_hf(kw):
    hf = _hf(3, **kw)
    ours = T5.from_hf(hf).eval()
    x = torch.randint(0, 61, (2, 12), generator=torch.Generator().manual_seed(0))
    a = greedy_decode(ours, x, 8)
    b = greedy_decode(ours, x, 8, use_cache=False)
    assert torch.equal(a, b)
    # greedy consistency with HF: feeding [start] + a[:-1] to HF, its argmax at each step is a
    dec = torch.cat([torch.zeros(2, 1, dtype=torch.long), a[:, :-1]], 1)
    with torch.no_grad():
        ref = hf(input_ids=x, decoder_input_ids=dec).logits.argmax(-1)
    assert torch.equal(a, ref)


def test_bad_inputs():
    m = T5(T5Config(vocab_size=20, d_model=16, d_head=4, d_ff=32, n_layer=1, n_decoder_layer=1, n_head=2, max_len=8))
    with pytest.raises(ValueError, match="max_len"):
        m(torch.zeros(1, 4, dtype=torch.long), torch.zeros(1, 9, dtype=torch.long))
    with pytest.raises(ValueError, match="input_ids"):
        m(torch.zeros(4, dtype=torch.long), torch.zeros(1, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="input_ids"):
        m(torch.zeros(1, 4), torch.zeros(1, 3, dtype=torch.long))


def _tiny(max_len=8):
    return T5(T5Config(vocab_size=20, d_model=16, d_head=4, d_ff=32, n_layer=1, n_decoder_layer=1, n_head=2,
                       max_len=max_len))


def _ids(n, batch=1):
    return torch.zeros(batch, n, dtype=torch.long)


def test_encoder_input_longer_than_window():
    m = _tiny()
    with pytest.raises(ValueError, match=r"`input_ids` has length 9, longer than the encoder window max_len=8"):
        m(_ids(9), _ids(3))
    with pytest.raises(ValueError, match=r"`input_ids`.*max_len=8"):
        m.encode(_ids(9))
    with pytest.raises(ValueError, match=r"`z` has 9 encoder positions.*max_len=8"):
        m.decode(_ids(2), torch.zeros(1, 9, 16))
    assert m.encode(_ids(8)).shape == (1, 8, 16)                     # the window itself is allowed


def test_decoder_input_longer_than_window():
    m = _tiny()
    with pytest.raises(ValueError, match=r"`decoder_input_ids` has length 9, longer than the decoder window max_len=8"):
        m(_ids(4), _ids(9))
    assert m(_ids(4), _ids(8)).shape == (1, 8, 20)


def test_cached_decoder_past_window():
    m = _tiny().eval()
    z = m.encode(_ids(4))
    caches = m.new_caches(1, 8)
    with torch.no_grad():
        m.decode(_ids(6), z, caches=caches)
        m.decode(_ids(2), z, caches=caches)                           # 8 positions: the whole window
        with pytest.raises(ValueError, match=r"`decoder_input_ids` brings the decoder to length 9 "
                                             r"\(8 cached \+ 1 new\).*max_len=8"):
            m.decode(_ids(1), z, caches=caches)


def test_greedy_decode_longer_than_window():
    m = _tiny().eval()
    with pytest.raises(ValueError, match=r"`max_new_tokens` \(9\) exceeds the decoder window max_len=8"):
        greedy_decode(m, _ids(4), 9)
    assert greedy_decode(m, _ids(4), 8).shape == (1, 8)
    assert greedy_decode(m, _ids(4), 8, use_cache=False).shape == (1, 8)


def test_attention_mask_shape():
    m = _tiny()
    with pytest.raises(ValueError, match=r"`attention_mask` must have the shape \(2, 5\)"):
        m(_ids(5, 2), _ids(3, 2), torch.ones(2, 4, dtype=torch.long))
    with pytest.raises(ValueError, match=r"`attention_mask` must have the shape \(1, 5\)"):
        m.decode(_ids(3), torch.zeros(1, 5, 16), torch.ones(5, dtype=torch.long))


@pytest.mark.parametrize("bad", [
    lambda: T5Config(d_head=0),
    lambda: T5Config(feed_forward_proj="gelu"),
    lambda: T5Config(norm_eps=float("nan")),
    lambda: T5Config(n_heads=3),                                          # the old name is gone
    lambda: T5Config(32),
    lambda: T5(T5Config(vocab_size=10, d_model=8, d_head=4, d_ff=16, n_head=2, n_layer=1,
                        n_decoder_layer=1))(torch.tensor([[11]]), torch.tensor([[1]])),
    lambda: T5(T5Config(vocab_size=10, d_model=8, d_head=4, d_ff=16, n_head=2, n_layer=1,
                        n_decoder_layer=1))(torch.zeros(1, 0, dtype=torch.long), torch.tensor([[1]])),
    lambda: T5.from_hf(torch.nn.Linear(2, 2)),
])
def test_more_bad_inputs_raise(bad):
    with pytest.raises((ValueError, TypeError)):
        bad()


def test_layers_are_the_one_block():
    from course_llm.layers import TransformerBlock
    new = T5Config(vocab_size=20, d_model=16, d_head=4, d_ff=32, n_layer=1, n_decoder_layer=2, n_head=2,
                   norm_eps=1e-5, tie_weights=False)
    m = T5(new)
    assert all(isinstance(b, TransformerBlock) for b in [*m.encoder, *m.decoder])
    assert m.decoder[0].config.cross_attention and m.decoder[0].config.attention_scale == 1.0


@pytest.mark.parametrize("kwargs, err, match", [
    ({"relative_position": [0, 1]}, TypeError, "relative_position"),
    ({"relative_position": torch.tensor([0.5])}, TypeError, "relative_position"),
    ({"num_buckets": 2.5}, TypeError, "num_buckets"),                 # was a ZeroDivisionError
    ({"num_buckets": 2}, ValueError, "num_buckets"),                  # bidirectional: 1 bucket per side
    ({"max_distance": 0}, ValueError, "max_distance"),                # was a math domain error
    ({"max_distance": float("nan")}, TypeError, "max_distance"),
    ({"bidirectional": "yes"}, TypeError, "bidirectional"),
])
def test_relative_position_bucket_rejects_bad_input(kwargs, err, match):
    args = {"relative_position": torch.arange(-3, 4), "bidirectional": True, "num_buckets": 8,
            "max_distance": 16, **kwargs}
    with pytest.raises(err, match=match):
        relative_position_bucket(**args)

"""course_llm.relative_bias against transformers' T5Attention (the same bucket function and bias)."""
from types import SimpleNamespace

import pytest
import torch
from transformers import T5Config as HFConfig
from transformers.models.t5.modeling_t5 import T5Attention

from course_llm.relative_bias import RelativeBias, relative_position_bucket


@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize("num_buckets,max_distance", [(32, 128), (8, 16), (6, 20)])
def test_bucket_matches_hf(bidirectional, num_buckets, max_distance):
    rel = torch.arange(-400, 401)[None, :] - torch.arange(0, 5)[:, None]
    want = T5Attention._relative_position_bucket(rel, bidirectional, num_buckets, max_distance)
    got = relative_position_bucket(rel, bidirectional, num_buckets, max_distance)
    assert torch.equal(got, want)


@pytest.mark.parametrize("is_decoder", [False, True])
def test_bias_matches_hf_compute_bias(is_decoder):
    cfg = HFConfig(d_model=16, d_kv=4, num_heads=3, relative_attention_num_buckets=8,
                   relative_attention_max_distance=20, is_decoder=is_decoder)
    torch.manual_seed(0)
    hf = T5Attention(cfg, has_relative_attention_bias=True).eval()
    ours = RelativeBias(SimpleNamespace(num_buckets=8, max_distance=20, n_head=3),
                        bidirectional=not is_decoder)
    ours.embedding.weight.data.copy_(hf.relative_attention_bias.weight)
    want = hf.compute_bias(6, 9)  # (1, H, 6, 9)
    assert torch.equal(ours(6, 9), want)
    # one decoding step at an offset is that row of the full matrix
    assert torch.equal(ours(1, 9, offset=5), want[:, :, 5:6])


def test_bias_rejects_bad_input():
    cfg = SimpleNamespace(num_buckets=8, max_distance=16, n_head=2)
    with pytest.raises(ValueError, match="n_head"):
        RelativeBias(SimpleNamespace(num_buckets=8, max_distance=16, n_head=0), True)
    with pytest.raises((TypeError, ValueError), match="num_buckets"):
        RelativeBias(SimpleNamespace(max_distance=16, n_head=2), True)
    with pytest.raises(TypeError, match="bidirectional"):
        RelativeBias(cfg, "yes")
    rel = RelativeBias(cfg, True)
    for args, match in [((0, 3), "n_query"), ((2, 0), "n_key"), ((2, 3, -1), "offset"),
                        ((2.5, 3), "n_query")]:
        with pytest.raises((TypeError, ValueError), match=match):
            rel(*args)

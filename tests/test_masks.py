"""course_llm.masks: causal, padding and combined masks, against torch's own masking."""
import pytest
import torch
import torch.nn.functional as F

from course_llm.masks import causal_mask, combined_mask, padding_mask


def test_causal_matches_torch_is_causal():
    q, k, v = torch.randn(3, 2, 5, 4), torch.randn(3, 2, 5, 4), torch.randn(3, 2, 5, 4)
    want = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    got = F.scaled_dot_product_attention(q, k, v, attn_mask=combined_mask(None, True, 5, 5))
    torch.testing.assert_close(got, want)


@pytest.mark.parametrize("dtype", [torch.bool, torch.float32])
def test_combined_equals_torch_with_both_masks(dtype):
    am = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    user = padding_mask(am) if dtype == torch.bool else torch.randn(2, 1, 5, 5)
    q, k, v = torch.randn(2, 2, 5, 4), torch.randn(2, 2, 5, 4), torch.randn(2, 2, 5, 4)
    ref = (user & causal_mask(5) if dtype == torch.bool
           else user.masked_fill(~torch.ones(5, 5, dtype=torch.bool).tril(), float("-inf")))
    torch.testing.assert_close(
        F.scaled_dot_product_attention(q, k, v, attn_mask=combined_mask(user, True, 5, 5)),
        F.scaled_dot_product_attention(q, k, v, attn_mask=ref))
    assert combined_mask(user, False, 5, 5) is user


def test_combined_bad_inputs():
    with pytest.raises(TypeError, match="`mask` must be a bool or float tensor"):
        combined_mask([[True]], False, 1, 1)
    with pytest.raises(ValueError, match="must broadcast to"):
        combined_mask(torch.ones(3, 4, dtype=torch.bool), True, 2, 4)
    with pytest.raises((TypeError, ValueError), match="is_causal"):
        combined_mask(None, 1, 2, 2)
    with pytest.raises(ValueError, match="n_query"):
        combined_mask(None, True, 0, 2)
    with pytest.raises((TypeError, ValueError), match="n_key"):
        combined_mask(None, True, 2, 1.5)

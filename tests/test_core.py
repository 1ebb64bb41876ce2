"""course_llm.core's shared input checks, against what torch says about the same inputs."""

import math

import pytest
import torch

from course_llm.core import check_float, check_tensor, check_token_ids


@pytest.mark.parametrize(
    "x",
    [
        torch.tensor([1.0, math.nan]),
        torch.tensor([[0.0, math.inf]]),
        torch.tensor([-math.inf]),
        torch.tensor([1.0, math.nan], dtype=torch.bfloat16),
    ],
)
def test_finite_rejects_what_torch_calls_not_finite(x):
    assert not torch.isfinite(x).all()
    with pytest.raises(ValueError, match=r"`x` holds NaN or inf"):
        check_tensor("x", x, finite=True)
    assert check_tensor("x", x) is x  # only asked for


@pytest.mark.parametrize(
    "x", [torch.randn(3, 4), torch.zeros(0), torch.arange(5), torch.tensor([True])]
)
def test_finite_accepts_finite_and_non_float(x):
    assert check_tensor("x", x, finite=True) is x


def test_check_tensor_names_the_argument():
    with pytest.raises(TypeError, match="`scores` must be a torch.Tensor"):
        check_tensor("scores", [1.0])
    with pytest.raises(ValueError, match=r"`q` must have shape \(\*, 4\)"):
        check_tensor("q", torch.zeros(2, 3), shape=(None, 4))
    with pytest.raises(TypeError, match="`ids` must have a int dtype"):
        check_tensor("ids", torch.zeros(2), dtype="int")


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_check_float_rejects_non_finite(bad):
    with pytest.raises(ValueError, match="`lr`"):
        check_float("lr", bad)


def test_finite_check_records_nothing_for_autograd():
    """Issue 31: the finite test ran with grad on, so `isfinite` saved a tensor for a
    backward pass nobody asked for. Counted with autograd's own saved-tensor hooks."""
    x = torch.randn(4, 3, requires_grad=True)
    bad = torch.tensor([1.0, math.nan], requires_grad=True)
    saved = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
        out = check_tensor("x", x, finite=True)
        with pytest.raises(ValueError, match="`x` holds NaN"):
            check_tensor("x", bad, finite=True)
    assert out is x and out.grad_fn is None
    assert saved == []


def test_check_token_ids_names_the_argument_the_vocabulary_came_from():
    ids = torch.tensor([[0, 6]])
    with pytest.raises(ValueError, match=r"`targets` holds token ids in \[0, 6\], but `logits` covers 6"):
        check_token_ids("targets", ids, 6, vocab_from="logits")
    with pytest.raises(ValueError, match="the vocabulary has 6 tokens"):
        check_token_ids("targets", ids, 6)
    assert check_token_ids("targets", ids, 7, vocab_from="logits") is ids

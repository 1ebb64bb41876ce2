"""Bad input at the public entry of course_llm.rnn_layers (issue 31): `RNN.forward` and
`LSTM.forward` refuse NaN/inf and empty inputs and states by name, on both paths (the fused
kernel and the step-by-step loop), and a valid call still matches torch.nn.RNN/LSTM."""
import pytest
import torch

from course_llm.rnn_layers import LSTM, RNN

NAN, INF = float("nan"), float("inf")


def _layers(fused):
    torch.manual_seed(0)
    return [RNN(3, 4, num_layers=2, bidirectional=True, fused=fused),
            LSTM(3, 4, num_layers=2, proj_size=2, fused=fused)]


@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("value", [NAN, INF, -INF])
def test_forward_refuses_non_finite_x(fused, value):
    for layer in _layers(fused):
        x = torch.randn(2, 5, 3)
        x[1, 3, 0] = value
        with pytest.raises(ValueError, match="`x` holds NaN or inf"):
            layer(x)
        with pytest.raises(ValueError, match="`x` holds NaN or inf"):
            layer(x, lengths=torch.tensor([5, 4]))


@pytest.mark.parametrize("fused", [True, False])
def test_forward_refuses_an_empty_batch(fused):
    for layer in _layers(fused):
        with pytest.raises(ValueError, match="`x` is empty"):
            layer(torch.zeros(0, 5, 3))
        with pytest.raises(ValueError, match="`x` has 0 time steps"):
            layer(torch.zeros(2, 0, 3))


@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("value", [NAN, INF])
def test_forward_refuses_non_finite_initial_states(fused, value):
    rnn, lstm = _layers(fused)
    x = torch.randn(2, 5, 3)
    h0 = torch.zeros(4, 2, 4)
    h0[0, 0, 0] = value
    with pytest.raises(ValueError, match="`h0` holds NaN or inf"):
        rnn(x, h0)
    h, c = torch.zeros(2, 2, 2), torch.zeros(2, 2, 4)
    with pytest.raises(ValueError, match="`h0` holds NaN or inf"):
        lstm(x, (h.index_fill(0, torch.tensor([1]), value), c))
    with pytest.raises(ValueError, match="`c0` holds NaN or inf"):
        lstm(x, (h, c.index_fill(0, torch.tensor([1]), value)))


def test_lstm_state_must_be_tensors():
    lstm = LSTM(3, 4)
    with pytest.raises(TypeError, match="`h0` must be a torch.Tensor"):
        lstm(torch.zeros(2, 5, 3), ([[0.0] * 4] * 2, torch.zeros(1, 2, 4)))


@pytest.mark.parametrize("fused", [True, False])
def test_valid_calls_still_match_torch(fused):
    """The checks change nothing on finite input: oracle torch.nn.RNN/LSTM."""
    x = torch.randn(2, 5, 3, generator=torch.Generator().manual_seed(1))
    for layer in _layers(fused):
        ref = layer.to_torch()
        out, _ = layer(x)
        assert torch.allclose(out, ref(x)[0], atol=1e-5)
    x.requires_grad_(True)                          # the check records no autograd node
    out, _ = _layers(fused)[0](x)
    out.sum().backward()
    assert x.grad is not None and torch.isfinite(x.grad).all()

"""course_llm.rnn against torch.nn.RNN / torch.nn.LSTM (copied weights) and clip_grad_norm_."""

import math
import warnings

import pytest
import torch

from course_llm.rnn_layers import LSTM, RNN
from course_llm.rnn import FixedWindowLM, RNNLM, generate, clip_grad_norm, lm_loss, stream_nll
from course_llm.rnn_cells import GRUCell, LSTMCell, RNNCell, hidden_grad_norms
from course_llm.rnn_classifier import LSTMClassifier, pad_batch

pytestmark = pytest.mark.filterwarnings("ignore:LSTM with projections")
TOL = 1e-5


def _max_diff(pairs):
    return max((a - b).abs().max().item() for a, b in pairs)


@pytest.mark.parametrize("num_layers", [1, 2])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("proj_size", [0, 3])
@pytest.mark.parametrize("fused", [False, True])
def test_lstm_matches_torch(num_layers, bidirectional, proj_size, fused):
    torch.manual_seed(num_layers * 10 + bidirectional + proj_size)
    ref = torch.nn.LSTM(5, 7, num_layers=num_layers, bidirectional=bidirectional,
                        proj_size=proj_size, batch_first=True)
    ours = LSTM(5, 7, num_layers, bidirectional, proj_size, fused=fused).load_torch(ref)
    x = torch.randn(3, 11, 5)
    D = 2 if bidirectional else 1
    h0 = torch.randn(D * num_layers, 3, proj_size or 7)
    c0 = torch.randn(D * num_layers, 3, 7)
    (o1, (h1, c1)), (o2, (h2, c2)) = ours(x, (h0, c0)), ref(x, (h0, c0))
    assert o1.shape == o2.shape and h1.shape == h2.shape and c1.shape == c2.shape
    assert _max_diff([(o1, o2), (h1, h2), (c1, c2)]) < TOL


@pytest.mark.parametrize("num_layers", [1, 2])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("nonlinearity", ["tanh", "relu"])
@pytest.mark.parametrize("fused", [False, True])
def test_rnn_matches_torch(num_layers, bidirectional, nonlinearity, fused):
    torch.manual_seed(1)
    ref = torch.nn.RNN(4, 6, num_layers=num_layers, bidirectional=bidirectional,
                       nonlinearity=nonlinearity, batch_first=True)
    ours = RNN(4, 6, num_layers, bidirectional, nonlinearity, fused=fused).load_torch(ref)
    x = torch.randn(2, 13, 4)
    (o1, h1), (o2, h2) = ours(x), ref(x)
    assert _max_diff([(o1, o2), (h1, h2)]) < TOL


@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("proj_size", [0, 2])
@pytest.mark.parametrize("fused", [False, True])
def test_lengths_match_packed_sequence(bidirectional, proj_size, fused):
    torch.manual_seed(2)
    ref = torch.nn.LSTM(3, 5, num_layers=2, bidirectional=bidirectional, proj_size=proj_size,
                        batch_first=True)
    ours = LSTM(3, 5, 2, bidirectional, proj_size, fused=fused).load_torch(ref)
    x, lengths = torch.randn(4, 8, 3), torch.tensor([8, 1, 5, 3])
    packed = torch.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    o2, (h2, c2) = ref(packed)
    o2 = torch.nn.utils.rnn.pad_packed_sequence(o2, batch_first=True, total_length=8)[0]
    o1, (h1, c1) = ours(x, lengths=lengths)
    assert _max_diff([(o1, o2), (h1, h2), (c1, c2)]) < TOL


def test_to_torch_round_trip():
    torch.manual_seed(3)
    ours = LSTM(4, 6, num_layers=2, bidirectional=True, proj_size=3)
    x = torch.randn(2, 7, 4)
    (o1, (h1, c1)), (o2, (h2, c2)) = ours(x), ours.to_torch()(x)
    assert _max_diff([(o1, o2), (h1, h2), (c1, c2)]) < TOL
    rnn = RNN(4, 6, num_layers=2)
    assert _max_diff([(rnn(x)[0], rnn.to_torch()(x)[0])]) < TOL


def test_cells_match_torch_cells():
    torch.manual_seed(4)
    u, h, c = torch.randn(3, 4), torch.randn(3, 5), torch.randn(3, 5)
    ref = torch.nn.LSTMCell(4, 5)
    cell = LSTMCell(4, 5)
    with torch.no_grad():
        cell.W_u.copy_(ref.weight_ih); cell.W_h.copy_(ref.weight_hh)
        cell.b.copy_(ref.bias_ih + ref.bias_hh)
    assert _max_diff(list(zip(cell(u, (h, c)), ref(u, (h, c))))) < TOL
    ref = torch.nn.RNNCell(4, 5)
    cell = RNNCell(4, 5)
    with torch.no_grad():
        cell.W_u.copy_(ref.weight_ih); cell.W_h.copy_(ref.weight_hh)
        cell.b.copy_(ref.bias_ih + ref.bias_hh)
    assert _max_diff([(cell(u, h), ref(u, h))]) < TOL


def test_gradients_match_torch():
    torch.manual_seed(5)
    ref = torch.nn.LSTM(3, 4, num_layers=2, bidirectional=True, batch_first=True)
    ours = LSTM(3, 4, 2, True).load_torch(ref)
    x = torch.randn(2, 6, 3)
    ours(x)[0].pow(2).sum().backward()
    ref(x)[0].pow(2).sum().backward()
    g_ref = ref.weight_hh_l1_reverse.grad
    assert torch.allclose(ours.cells[3].W_h.grad, g_ref, atol=1e-5)
    assert torch.allclose(ours.cells[0].b.grad, ref.bias_ih_l0.grad, atol=1e-5)


@pytest.mark.parametrize("max_norm", [0.1, 1.0, 1e6])
def test_clip_equals_clip_grad_norm_(max_norm):
    torch.manual_seed(6)
    a, b = RNN(3, 5, num_layers=2), RNN(3, 5, num_layers=2)
    b.load_state_dict(a.state_dict())
    x = torch.randn(2, 9, 3) * 3
    for m in (a, b):
        m(x)[0].pow(2).sum().backward()
    n1 = clip_grad_norm(a.parameters(), max_norm)
    n2 = torch.nn.utils.clip_grad_norm_(b.parameters(), max_norm)
    assert torch.allclose(n1, n2, rtol=1e-6)
    for p, q in zip(a.parameters(), b.parameters()):
        assert torch.allclose(p.grad, q.grad, rtol=1e-5, atol=1e-8)


def test_clip_formula_and_errors():
    w = torch.nn.Parameter(torch.zeros(2))
    w.grad = torch.tensor([0.3, 0.4])
    clip_grad_norm([w], 1.0)                       # ||g|| = 0.5 <= 1: unchanged (min, not max)
    assert torch.allclose(w.grad, torch.tensor([0.3, 0.4]))
    w.grad = torch.zeros(2)
    assert clip_grad_norm([w], 1.0) == 0 and torch.equal(w.grad, torch.zeros(2))
    with pytest.raises(ValueError, match="max_norm"):
        clip_grad_norm([w], 0.0)


def test_hidden_grad_norms_linear_closed_form():
    # an identity-activation RNN is not available, but a relu RNN with positive states is linear:
    # W_h = rho * I, positive inputs, zero W_u contribution keeps everything in the linear regime
    cell = RNNCell(1, 3, nonlinearity="relu").double()
    with torch.no_grad():
        cell.W_h.copy_(0.9 * torch.eye(3, dtype=torch.float64))
        cell.W_u.fill_(1.0); cell.b.fill_(0.0)
    u = torch.ones(1, 20, 1, dtype=torch.float64)
    norms = hidden_grad_norms(cell, u)
    expected = torch.tensor([0.9 ** (19 - k) * math.sqrt(3) for k in range(20)], dtype=torch.float64)
    assert torch.allclose(norms, expected)


def test_fixed_window_is_a_window():
    torch.manual_seed(7)
    lm = FixedWindowLM(9, context_size=3, d_embed=4, d_hidden=5)
    x = torch.randint(0, 9, (2, 10))
    out = lm(x)
    assert out.shape == (2, 8, 9)
    # position t only sees x[:, t:t+3]: evaluate each window on its own
    for t in range(8):
        assert torch.allclose(out[:, t], lm(x[:, t:t + 3])[:, 0], atol=1e-6)
    with pytest.raises(ValueError, match="context_size"):
        lm(x[:, :2])


def test_stream_nll_equals_full_pass():
    torch.manual_seed(8)
    lm = RNNLM(6, 4, 8, cell="lstm")
    ids = torch.randint(0, 6, (200,))
    # one stream, blocks of 37: carrying the state must equal one pass over the whole sequence
    with torch.no_grad():
        logits, _ = lm(ids[None, :-1])
        full = lm_loss(logits, ids[None, 1:]).item()
    assert math.isclose(stream_nll(lm, ids, n_streams=1, seq_len=37), full, rel_tol=1e-5)


def test_classifier_padding_and_pooling():
    torch.manual_seed(9)
    seqs = [torch.tensor([2, 3, 4, 5]), torch.tensor([6]), torch.tensor([7, 8])]
    for pooling in ("last", "mean", "max"):
        for bidirectional in (False, True):
            clf = LSTMClassifier(10, 4, 6, pooling=pooling, bidirectional=bidirectional)
            batched = clf(seqs)
            alone = torch.cat([clf([s]) for s in seqs])
            assert torch.allclose(batched, alone, atol=1e-6)
    # mean pooling by brute force: mean over the real states of a torch LSTM with the same weights
    clf = LSTMClassifier(10, 4, 6, pooling="mean")
    ref = clf.rnn.to_torch()
    s = seqs[0]
    with torch.no_grad():
        feats = ref(clf.E(s)[None])[0].mean(1)
        assert torch.allclose(clf([s]), clf.head(feats)[:, 0], atol=1e-6)


def test_bad_inputs():
    with pytest.raises(ValueError, match="shape mismatch"):
        LSTM(5, 7, proj_size=3).load_torch(torch.nn.LSTM(5, 7, proj_size=2))
    with pytest.raises(ValueError, match="shape mismatch"):
        LSTM(5, 7).load_torch(torch.nn.LSTM(4, 7))
    with pytest.raises(TypeError, match="torch.nn.LSTM"):
        LSTM(5, 7).load_torch(torch.nn.RNN(5, 7))
    with pytest.raises(ValueError, match="0 time steps"):
        LSTM(2, 3)(torch.zeros(1, 0, 2))
    with pytest.raises(ValueError, match="lengths"):
        LSTM(2, 3)(torch.zeros(2, 4, 2), lengths=torch.tensor([4, 0]))
    with pytest.raises(ValueError, match="length 0"):
        pad_batch([torch.tensor([1]), torch.tensor([], dtype=torch.long)])
    with pytest.raises(ValueError, match="padding_idx"):
        LSTMClassifier(10, 4, 6, padding_idx=10)
    with pytest.raises(ValueError, match="proj_size"):
        LSTMCell(3, 4, proj_size=4)


_LM = RNNLM(5, 4, 8)


@pytest.mark.parametrize("make, error, match", [
    (lambda: FixedWindowLM(10, 3, 4, 8)(torch.zeros(2, 5)), TypeError, "int dtype"),
    (lambda: FixedWindowLM(10, 3, 4, 8)(torch.full((2, 5), 10)), ValueError, "vocabulary"),
    (lambda: FixedWindowLM(10, 0, 4, 8), ValueError, "context_size"),
    (lambda: RNNCell(3, 4)(torch.zeros(2, 5), torch.zeros(2, 4)), ValueError, "input_size"),
    (lambda: RNNCell(3, 4)(torch.zeros(2, 3), torch.zeros(2, 5)), ValueError, "`h`"),
    (lambda: RNNCell(3, 4, "sigmoid"), ValueError, "nonlinearity"),
    (lambda: RNNCell(True, 4), TypeError, "input_size"),
    (lambda: RNNCell(3, 0), ValueError, "hidden_size"),
    (lambda: LSTMCell(3, 4)(torch.zeros(2, 3), torch.zeros(2, 4)), TypeError, "pair"),
    (lambda: LSTMCell(3, 4)(torch.zeros(2, 3), (torch.zeros(2, 4), torch.zeros(2, 3))), ValueError, "`c`"),
    (lambda: LSTMCell(3, 4, proj_size=-1), ValueError, "proj_size"),
    (lambda: LSTMCell(3, 4, proj_size=1.5), TypeError, "proj_size"),
    (lambda: RNN(3, 4, num_layers=0), ValueError, "num_layers"),
    (lambda: RNN(3, 4, bidirectional="yes"), TypeError, "bidirectional"),
    (lambda: RNN(3, 4)(torch.zeros(2, 5, 3, dtype=torch.long)), TypeError, "float"),
    (lambda: RNN(3, 4)(torch.zeros(2, 5, 4)), ValueError, "`x`"),
    (lambda: RNN(3, 4)(torch.zeros(2, 5, 3), lengths=torch.tensor([2.5, 3.0])), TypeError, "lengths"),
    (lambda: RNN(3, 4)(torch.zeros(2, 5, 3), lengths=torch.tensor([2, 6])), ValueError, "lengths"),
    (lambda: RNN(3, 4)(torch.zeros(2, 5, 3), lengths=torch.tensor([2])), ValueError, "lengths"),
    (lambda: RNN(3, 4)(torch.zeros(2, 5, 3), torch.zeros(1, 2, 5)), ValueError, "h0"),
    (lambda: LSTM(3, 4)(torch.zeros(2, 5, 3), torch.zeros(1, 2, 4)), TypeError, "pair"),
    (lambda: hidden_grad_norms(RNNCell(2, 3), torch.zeros(1, 3, 5)), ValueError, "`u`"),
    (lambda: hidden_grad_norms(RNNCell(2, 3), torch.zeros(1, 0, 2)), ValueError, "length"),
    (lambda: hidden_grad_norms(RNNCell(2, 3), torch.zeros(1, 3, 2), torch.ones(5)), ValueError, "readout"),
    (lambda: hidden_grad_norms(torch.nn.Linear(2, 3), torch.zeros(1, 3, 2)), TypeError, "cell"),
    (lambda: clip_grad_norm([torch.nn.Parameter(torch.zeros(2))], float("nan")), ValueError, "max_norm"),
    (lambda: clip_grad_norm([torch.nn.Parameter(torch.zeros(2))], float("inf")), ValueError, "max_norm"),
    (lambda: clip_grad_norm([torch.nn.Parameter(torch.zeros(2))], "1"), TypeError, "max_norm"),
    (lambda: _LM(torch.tensor([[5]])), ValueError, "vocabulary"),
    (lambda: _LM(torch.tensor([[-1]])), ValueError, "vocabulary"),
    (lambda: _LM(torch.zeros(1, 3)), TypeError, "int dtype"),
    (lambda: _LM(torch.tensor([1, 2])), ValueError, "dimensions"),
    (lambda: RNNLM(5, 4, 8, dropout=float("nan")), ValueError, "dropout"),
    (lambda: RNNLM(5, 4, 8, dropout=1.0), ValueError, "dropout"),
    (lambda: RNNLM(5, 4, 8, cell="gru"), ValueError, "cell"),
    (lambda: RNNLM(5, 4, 8, cell="rnn", proj_size=2), ValueError, "proj_size"),
    (lambda: RNNLM(0, 4, 8), ValueError, "vocab_size"),
    (lambda: lm_loss(torch.zeros(1, 3, 4), torch.zeros(1, 2, dtype=torch.long)), ValueError, "leading"),
    (lambda: lm_loss(torch.zeros(1, 3, 4), torch.full((1, 3), 4)), ValueError, "vocabulary"),
    (lambda: lm_loss(torch.zeros(1, 3, 4), torch.zeros(1, 3)), TypeError, "targets"),
    (lambda: stream_nll(_LM, torch.randint(0, 5, (100,)), n_streams=0), ValueError, "n_streams"),
    (lambda: stream_nll(_LM, torch.randint(0, 5, (100,)), seq_len=0), ValueError, "seq_len"),
    (lambda: stream_nll(_LM, torch.randint(5, 9, (100,)), n_streams=2), ValueError, "vocabulary"),
    (lambda: stream_nll(_LM, torch.randint(0, 5, (10,)), n_streams=8), ValueError, "n_streams"),
    (lambda: stream_nll(torch.nn.Linear(2, 2), torch.randint(0, 5, (100,))), TypeError, "RNNLM"),
    (lambda: generate(_LM, torch.tensor([1]), 3, temperature=float("nan")), ValueError, "temperature"),
    (lambda: generate(_LM, torch.tensor([1]), 3, temperature=0), ValueError, "temperature"),
    (lambda: generate(_LM, torch.tensor([1]), -1), ValueError, "max_new_tokens"),
    (lambda: generate(_LM, torch.tensor([7]), 2), ValueError, "vocabulary"),
    (lambda: generate(_LM, torch.tensor([], dtype=torch.long), 2), ValueError, "empty"),
    (lambda: pad_batch([torch.tensor([1])], padding_idx=-1), ValueError, "padding_idx"),
    (lambda: pad_batch([torch.tensor([[1, 2]])]), ValueError, "seqs\\[0\\]"),
    (lambda: pad_batch([torch.tensor([1.5])]), TypeError, "seqs\\[0\\]"),
    (lambda: pad_batch([]), ValueError, "non-empty"),
    (lambda: LSTMClassifier(10, 4, 6, max_len=0), ValueError, "max_len"),
    (lambda: LSTMClassifier(10, 4, 6, pooling="sum"), ValueError, "pooling"),
    (lambda: LSTMClassifier(10, 4, 6)([torch.tensor([12])]), ValueError, "vocabulary"),
    (lambda: LSTMClassifier(0, 4, 6), ValueError, "vocab_size"),
])
def test_bad_input_is_named(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_lm_loss_and_pad_batch_name_bad_arguments():
    with pytest.raises(TypeError, match="targets"):
        lm_loss(torch.zeros(1, 3, 4), [[0, 1, 2]])
    with pytest.raises(TypeError, match="targets"):
        lm_loss(torch.zeros(1, 3, 4), torch.zeros(1, 3))
    with pytest.raises(ValueError, match="seqs"):
        pad_batch("abc")


def test_fused_and_loop_gradients_agree():
    torch.manual_seed(6)
    loop, fast = LSTM(3, 4, 2, True, proj_size=2, fused=False), LSTM(3, 4, 2, True, proj_size=2)
    fast.load_state_dict(loop.state_dict())
    x, lengths = torch.randn(3, 7, 3), torch.tensor([7, 2, 4])
    for m in (loop, fast):
        m(x, lengths=lengths)[0].pow(2).sum().backward()
    assert _max_diff([(p.grad, q.grad) for p, q in zip(loop.parameters(), fast.parameters())]) < TOL
    with pytest.raises(TypeError, match="fused"):
        LSTM(3, 4, fused="yes")


def test_gru_cell_matches_torch():
    from course_llm.rnn_cells import GRUCell
    torch.manual_seed(7)
    ref, cell = torch.nn.GRUCell(3, 5), GRUCell(3, 5)
    with torch.no_grad():
        cell.W_u.copy_(ref.weight_ih); cell.W_h.copy_(ref.weight_hh)
        b_hr, b_hz, b_hn = ref.bias_hh.chunk(3)
        cell.b.copy_(ref.bias_ih + torch.cat([b_hr, b_hz, torch.zeros(5)]))
        cell.b_hn.copy_(b_hn)
    u, h = torch.randn(4, 3), torch.randn(4, 5)
    assert _max_diff([(cell(u, h), ref(u, h))]) < TOL
    norms = hidden_grad_norms(cell, torch.randn(2, 6, 3))
    assert norms.shape == (6,)
    with pytest.raises(ValueError, match="`u`"):
        cell(torch.randn(4, 2), h)
    with pytest.raises(ValueError, match="`h`"):
        cell(u, torch.randn(4, 4))
    with pytest.raises(ValueError, match="hidden_size"):
        GRUCell(3, 0)


# Issue 31: NaN and inf are refused by name at the entry points; a wrong vocabulary size in
# `logits` is named as such, not blamed on `targets` alone.
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_lm_loss_refuses_non_finite_logits(value):
    logits = torch.randn(2, 3, 5)
    logits[1, 2, 0] = value
    with pytest.raises(ValueError, match="`logits` holds NaN or inf"):
        lm_loss(logits, torch.zeros(2, 3, dtype=torch.long))


def test_lm_loss_names_logits_when_its_vocabulary_is_too_small():
    with pytest.raises(ValueError, match=r"`targets` holds token ids in \[0, 6\], but `logits` covers 6"):
        lm_loss(torch.randn(1, 2, 6), torch.tensor([[0, 6]]))
    logits, targets = torch.randn(2, 3, 7), torch.randint(0, 7, (2, 3))  # oracle: torch's loss
    assert torch.allclose(lm_loss(logits, targets), torch.nn.functional.cross_entropy(
        logits.reshape(6, 7), targets.reshape(6)))


@pytest.mark.parametrize("value", [math.nan, math.inf])
@pytest.mark.parametrize("make, state_names", [
    (lambda: RNNCell(3, 4), ("h",)),
    (lambda: LSTMCell(3, 4, proj_size=2), ("h", "c")),
    (lambda: GRUCell(3, 4), ("h",)),
])
def test_cells_refuse_non_finite_inputs_and_states(make, state_names, value):
    cell = make()
    u = torch.randn(2, 3)
    h = torch.zeros(2, cell.state_size)
    state = (h, torch.zeros(2, cell.hidden_size)) if len(state_names) == 2 else h
    bad_u = u.clone()
    bad_u[1, 0] = value
    with pytest.raises(ValueError, match="`u` holds NaN or inf"):
        cell(bad_u, state)
    for i, name in enumerate(state_names):
        parts = list(state) if len(state_names) == 2 else [state]
        parts[i] = parts[i].clone()
        parts[i][0, 0] = value
        with pytest.raises(ValueError, match=f"`{name}` holds NaN or inf"):
            cell(u, tuple(parts) if len(state_names) == 2 else parts[0])
    cell(u, state)  # the finite call runs


def test_hidden_grad_norms_equals_autograd_through_forward():
    """The unchecked loop (input_part + step) gives the gradients of calling the cell."""
    torch.manual_seed(4)
    cell, u = LSTMCell(3, 5), torch.randn(2, 6, 3)
    h = (torch.zeros(2, 5), torch.zeros(2, 5))
    hs = []
    for t in range(6):
        h = cell(u[:, t], h)
        hs.append(h[0])
    grads = torch.autograd.grad(hs[-1].sum(), hs)
    want = torch.stack([g.norm(dim=-1).mean() for g in grads])
    assert torch.allclose(hidden_grad_norms(cell, u), want, atol=1e-6)
    with pytest.raises(ValueError, match="`u` holds NaN or inf"):
        hidden_grad_norms(cell, u * math.nan)

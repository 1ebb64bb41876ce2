"""course_llm.train_eval against brute force: F.cross_entropy over the windows, by hand."""
import math

import matplotlib

matplotlib.use("Agg")
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from course_llm.train_eval import (
    as_token_ids,
    autocast_context,
    evaluate_loss,
    model_vocab_size,
    next_token_loss,
    plot_history,
)


class Bigram(nn.Module):
    def __init__(self, vocab_size, with_config=True):
        super().__init__()
        self.table = nn.Embedding(vocab_size, vocab_size)
        if with_config:
            self.config = type("Cfg", (), {"vocab_size": vocab_size})()

    def forward(self, idx, targets=None):
        logits = self.table(idx)
        return logits, F.cross_entropy(logits.flatten(0, 1), targets.flatten())


def _brute(model, ids, T):
    n = (len(ids) - 1) // T
    x, y = ids[: n * T].view(n, T), ids[1 : n * T + 1].view(n, T)
    with torch.no_grad():
        return F.cross_entropy(model.table.weight[x].flatten(0, 1), y.flatten()).item()


@pytest.mark.parametrize("n_ids,T,batch", [(1001, 16, 8), (97, 8, 3), (17, 16, 5)])
def test_evaluate_loss_equals_brute_force(n_ids, T, batch):
    torch.manual_seed(0)
    model = Bigram(11)
    ids = torch.randint(11, (n_ids,))
    assert math.isclose(evaluate_loss(model, ids, T, batch), _brute(model, ids, T), rel_tol=1e-6)


def test_evaluate_loss_max_tokens_and_mode():
    torch.manual_seed(1)
    model = Bigram(5).train()
    ids = torch.randint(5, (500,))
    got = evaluate_loss(model, ids, 10, 4, max_tokens=100)
    assert math.isclose(got, _brute(model, ids[:101], 10), rel_tol=1e-6)
    assert model.training  # restored
    model.eval()
    evaluate_loss(model, ids, 10)
    assert not model.training


def test_next_token_loss_and_contract():
    model = Bigram(6)
    x, y = torch.randint(6, (2, 4)), torch.randint(6, (2, 4))
    want = F.cross_entropy(model.table.weight[x].flatten(0, 1), y.flatten())
    assert torch.allclose(next_token_loss(model, x, y), want)
    with pytest.raises(TypeError, match="must return \\(logits, loss\\)"):
        next_token_loss(lambda a, b: a.float(), x, y)
    with pytest.raises(TypeError, match="callable"):
        next_token_loss(3, x, y)
    with pytest.raises(ValueError, match="vocabulary"):
        next_token_loss(Bigram(6, with_config=False), x + 6, y)


def test_as_token_ids_and_vocab():
    assert as_token_ids("ids", [1, 2]).dtype == torch.long
    assert model_vocab_size(Bigram(9)) == 9 and model_vocab_size(Bigram(9, False)) is None
    for bad, err in [([1, -1], ValueError), ([[1, 2]], ValueError), ([0.5], (TypeError, ValueError)),
                     ([1, 5], ValueError), (["a"], TypeError)]:
        with pytest.raises(err):
            as_token_ids("ids", bad, vocab_size=5)
    with pytest.raises(ValueError):
        as_token_ids("ids", [1], vocab_size=0)
    with pytest.raises(TypeError, match="model"):
        model_vocab_size("gpt")


def test_evaluate_loss_rejects_bad_input():
    model, ids = Bigram(5), torch.arange(50) % 5
    with pytest.raises(ValueError, match="seq_len"):
        evaluate_loss(model, ids, 0)
    with pytest.raises(ValueError, match="batch_size"):
        evaluate_loss(model, ids, 4, batch_size=0)
    with pytest.raises(ValueError, match="max_tokens"):
        evaluate_loss(model, ids, 4, max_tokens=-1)
    with pytest.raises(ValueError, match="ids"):
        evaluate_loss(model, ids + 5, 4)  # beyond the model's vocabulary
    with pytest.raises(ValueError):
        evaluate_loss(model, ids[:4], 4)  # not one window
    with pytest.raises(TypeError, match="dtype"):
        evaluate_loss(model, ids, 4, amp_dtype="bf16")


def test_autocast_context_matches_torch():
    a, b = torch.randn(4, 4), torch.randn(4, 4)
    with autocast_context("cpu", torch.bfloat16):
        ours = a @ b
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ref = a @ b
    assert ours.dtype == ref.dtype == torch.bfloat16 and torch.equal(ours, ref)
    with autocast_context("cpu", None):
        assert (a @ b).dtype == torch.float32


def test_plot_history():
    h = {"step": [0, 1, 2], "train_loss": [3.0, 2.0, 1.0], "val_step": [3], "val_loss": [1.5]}
    ax = plot_history(h, per_char=2.0)
    assert list(ax.lines[0].get_ydata()) == [1.5, 1.0, 0.5]
    assert list(ax.lines[1].get_xdata()) == [3] and "character" in ax.get_ylabel()
    with pytest.raises(ValueError, match="history"):
        plot_history({"step": []})
    for bad in (0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="per_char"):
            plot_history(h, per_char=bad)

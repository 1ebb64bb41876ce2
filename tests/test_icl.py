"""course_llm.icl: the answer-only training loop on a toy task and the accuracy measurements."""
import pytest
import torch

import course_llm.icl as icl

from course_llm.gpt import GPT
from course_llm.gpt_config import GPTConfig
from course_llm.icl import accuracy_by_shots, fit_answers
from course_llm.icl_tasks import mapping_batch, rule_batch


def test_fit_answers_ignores_unmarked_positions():
    torch.manual_seed(0)
    model = GPT(GPTConfig.llama_style(vocab_size=6, max_len=8, n_layer=1, d_model=16, n_head=2, n_kv_head=1))
    seq = torch.tensor([[0, 5, 1, 5]] * 8)
    targets = torch.tensor([[-100, -100, -100, 5]] * 8)                 # only the last token counts
    losses = fit_answers(model, lambda: (seq, targets), 40, max_lr=1e-2)
    logits = model(seq)[0]
    assert losses[-1] < 0.05
    assert logits[0, 2].argmax().item() == 5
    assert not model.training


def test_accuracy_by_shots_matches_manual_argmax():
    model = GPT(GPTConfig.gpt2_style(vocab_size=8, max_len=8)).eval()
    seq, _ = mapping_batch(16, 4, 4, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        logits = model(seq)[0]
    want = [(logits[:, 2 * k].argmax(-1) == seq[:, 2 * k + 1]).float().mean().item() for k in range(4)]
    assert accuracy_by_shots(model, seq) == pytest.approx(want)


def test_validation():
    with pytest.raises(ValueError, match="parity"):
        mapping_batch(2, 4, 3, parity=2)
    with pytest.raises(ValueError, match="n_keys"):
        mapping_batch(2, 1, 3)
    with pytest.raises(TypeError, match="model"):
        fit_answers(torch.nn.Linear(2, 2), None, 1)
    with pytest.raises(ValueError, match="seq"):
        accuracy_by_shots(GPT(GPTConfig.gpt2_style(vocab_size=8, max_len=8)), torch.zeros(2, 3, dtype=torch.long))


class FixedPredictions(torch.nn.Module):
    """A stand-in model whose argmax at position t is pred[:, t]."""

    def __init__(self, pred, vocab):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(1))
        self.pred, self.vocab = pred, vocab

    def forward(self, seq):
        return (torch.nn.functional.one_hot(self.pred, self.vocab).float(),)


def test_accuracy_by_shots_exact_match_on_multi_token_answers():
    A = 8
    seq, targets = rule_batch(300, 3, ["reverse", "double"], torch.Generator().manual_seed(3), n_letters=A, length=3)
    g = torch.Generator().manual_seed(4)
    pred = torch.roll(seq, -1, 1)                                   # position t predicts token t + 1: all right
    flip = torch.rand(seq.shape, generator=g) < 0.15
    pred = torch.where(flip, (pred + 1) % (A + 3), pred)            # ...except some corrupted predictions
    acc = accuracy_by_shots(FixedPredictions(pred, A + 3), seq, targets)
    # oracle: walk each row in Python, an answer is right iff every asked position's prediction is right
    right = [[0] * 4 for _ in range(len(seq))]
    for r, (row_p, row_t) in enumerate(zip(pred.tolist(), targets.tolist())):
        k, inside, ok = -1, False, True
        for t in range(1, len(row_t)):
            if row_t[t] != -100 and not inside:
                k, inside, ok = k + 1, True, True
            if row_t[t] != -100:
                ok = ok and row_p[t - 1] == row_t[t]
                right[r][k] = int(ok)
            else:
                inside = False
    want = [sum(r[k] for r in right) / len(right) for k in range(4)]
    assert acc == pytest.approx(want)
    assert 0.05 < min(want) < max(want) < 0.95                      # the check is not trivially all 0 or all 1


def test_accuracy_by_shots_targets_none_is_the_mapping_layout():
    model = GPT(GPTConfig.gpt2_style(vocab_size=8, max_len=8)).eval()
    seq, targets = mapping_batch(32, 4, 4, generator=torch.Generator().manual_seed(5))
    assert accuracy_by_shots(model, seq) == pytest.approx(accuracy_by_shots(model, seq, targets))
    with pytest.raises(ValueError, match="targets"):
        accuracy_by_shots(model, seq, targets[:, :-1])
    with pytest.raises(ValueError, match="targets"):
        accuracy_by_shots(model, seq, seq)                          # position 0 asked
    uneven = targets.clone()
    uneven[0, 1] = -100
    with pytest.raises(ValueError, match="same number"):
        accuracy_by_shots(model, seq, uneven)


# ---- bad input: every public function names the argument ------------------------------------------
def _tiny():
    return GPT(GPTConfig.gpt2_style(vocab_size=8, max_len=8, n_layer=1, d_model=16)).eval()


@pytest.mark.parametrize("call, err, match", [
    (lambda: fit_answers(_tiny(), lambda: None, 0), ValueError, "steps"),
    (lambda: fit_answers(_tiny(), None, 1), TypeError, "batch_fn"),
    (lambda: fit_answers(_tiny(), lambda: None, 1, max_lr=float("nan")), ValueError, "max_lr"),
    (lambda: fit_answers(_tiny(), lambda: None, 1, warmup_steps=-1), ValueError, "warmup_steps"),
    (lambda: accuracy_by_shots(_tiny(), torch.tensor([[1, 9]])), ValueError, "seq"),
    (lambda: accuracy_by_shots(_tiny(), torch.zeros(2, 4)), TypeError, "seq"),
    (lambda: accuracy_by_shots(_tiny(), torch.zeros(2, 4, dtype=torch.long), torch.zeros(2, 4)), TypeError, "targets"),
    (lambda: icl.final_answer_accuracy(_tiny(), torch.zeros(2, 4, dtype=torch.long), torch.zeros(3, dtype=torch.long), 2),
     ValueError, "y"),
    (lambda: icl.final_answer_accuracy(_tiny(), torch.zeros(2, 4, dtype=torch.long), torch.zeros(2, dtype=torch.long), 4),
     ValueError, "n_prompt"),
    (lambda: icl.final_answer_accuracy(_tiny(), torch.full((2, 4), 8), torch.zeros(2, dtype=torch.long), 2),
     ValueError, "seq"),
])
def test_bad_inputs(call, err, match):
    with pytest.raises(err, match=match):
        call()

"""Tests for course_llm.sft: response-only labels, zero prompt gradient, truncation."""

import math

import pytest
import torch
import torch.nn.functional as F

from course_llm.chat import IM_END, IM_START, render_chat
from course_llm.sft import (build_sft_example, sft_labels, sft_loss, sft_microbatch_step,
                            truncate_conversation)
from course_llm.fast_bpe import BPETokenizer

TOK = BPETokenizer.train("What is the capital of France? Paris. " * 5, 256 + 10,
                         special_tokens=[IM_START, IM_END])
CHAT = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Capital of France?"},
        {"role": "assistant", "content": "Paris."}, {"role": "user", "content": "Of Italy?"},
        {"role": "assistant", "content": "Rome."}]


def test_labels_cover_exactly_the_replies():
    ids, labels = build_sft_example(TOK, CHAT, 256)
    assert TOK.decode(ids) == render_chat(CHAT)
    kept = [i for i, l in zip(ids, labels) if l != -100]
    assert all(l in (-100, i) for i, l in zip(ids, labels))
    assert TOK.decode(kept) == "Paris.<|im_end|>Rome.<|im_end|>"


def test_prompt_positions_get_zero_gradient_and_loss_matches_cross_entropy():
    torch.manual_seed(0)
    ids, labels = build_sft_example(TOK, CHAT, 256)
    y = torch.tensor([labels])
    logits = torch.randn(1, len(ids), TOK.vocab_size, requires_grad=True)
    loss = sft_loss(logits, y)
    loss.backward()
    resp = [t for t in range(len(ids) - 1) if labels[t + 1] != -100]   # positions predicting a reply token
    oracle = F.cross_entropy(logits[0, resp].detach(), torch.tensor([ids[t + 1] for t in resp]))
    torch.testing.assert_close(loss.detach(), oracle)
    prompt = [t for t in range(len(ids)) if t not in resp]
    assert logits.grad[0, prompt].abs().max() == 0
    # perturbing prompt-position logits leaves the loss unchanged
    bumped = logits.detach().clone()
    bumped[0, prompt] += torch.randn(len(prompt), TOK.vocab_size)
    assert sft_loss(bumped, y) == loss.detach()


def test_sft_labels_and_errors():
    assert sft_labels([1], [2, 3], ignore_index=-1) == ([1, 2, 3], [-1, 2, 3])
    with pytest.raises(ValueError, match="seq_len"):
        build_sft_example(TOK, CHAT, 5)
    with pytest.raises(ValueError, match="role"):
        build_sft_example(TOK, [{"role": "robot", "content": "x"}], 64)


def test_truncation_drops_oldest_keeps_system_and_last_user():
    msgs = CHAT + [{"role": "user", "content": "And of Spain?"}]
    full = len(TOK.encode(render_chat(msgs, True), allowed_special="all"))
    assert truncate_conversation(msgs, TOK, full) == msgs
    short = truncate_conversation(msgs, TOK, full - 1)
    assert short[0] == msgs[0] and short[-1] == msgs[-1] and short[1:] == msgs[len(msgs) - len(short) + 1:]
    assert len(TOK.encode(render_chat(short, True), allowed_special="all")) <= full - 1
    with pytest.raises(ValueError, match="last user turn"):
        truncate_conversation(msgs, TOK, 10)


from course_llm.sft import collate_sft  # noqa: E402


def test_collate_pads_right_and_padding_changes_nothing():
    from course_llm.gpt import GPT
    from course_llm.gpt_config import GPTConfig
    torch.manual_seed(0)
    a = build_sft_example(TOK, CHAT[1:3], 256)
    b = build_sft_example(TOK, CHAT, 256)
    x, y = collate_sft([a, b], pad_id=7)
    assert x.shape == y.shape == (2, len(b[0]))
    assert x[0, :len(a[0])].tolist() == a[0] and set(x[0, len(a[0]):].tolist()) == {7}
    assert set(y[0, len(a[1]):].tolist()) == {-100}
    model = GPT(GPTConfig.gpt2_style(vocab_size=TOK.vocab_size, max_len=256, n_layer=1, d_model=16)).eval()
    # oracle: the loss of the lone unpadded example, computed by F.cross_entropy on its own
    alone = model(torch.tensor([a[0]]))[0][0]
    tgt = torch.tensor(a[1][1:])
    keep = tgt != -100
    torch.testing.assert_close(model(x)[0][0, :len(a[0])], alone, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(sft_loss(model(x[:1])[0], y[:1]),
                               F.cross_entropy(alone[:-1][keep], tgt[keep]), atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="examples"):
        collate_sft([])
    with pytest.raises(ValueError, match="equal length"):
        collate_sft([([1, 2], [1])])


@pytest.mark.parametrize("call, err, match", [
    (lambda: sft_labels([1], []), ValueError, "response_ids"),
    (lambda: sft_labels([], [2]), ValueError, "prompt_ids"),                # was accepted
    (lambda: sft_loss(torch.zeros(0, 3, 5), torch.zeros(0, 3, dtype=torch.long)), ValueError, "logits"),
    (lambda: sft_loss(torch.full((1, 3, 5), float("nan")), torch.ones(1, 3, dtype=torch.long)),
     ValueError, "NaN"),
    (lambda: sft_loss(torch.full((1, 3, 5), float("inf")), torch.ones(1, 3, dtype=torch.long)),
     ValueError, "logits"),
    (lambda: sft_labels([1], [-5]), TypeError, "response_ids"),
    (lambda: sft_labels([1], [2], ignore_index=None), TypeError, "ignore_index"),
    (lambda: build_sft_example(TOK, CHAT, 0), ValueError, "seq_len"),
    (lambda: truncate_conversation(CHAT, TOK, 64, add_generation_prompt="yes"), TypeError, "add_generation_prompt"),
    (lambda: truncate_conversation(CHAT, TOK, -1), ValueError, "seq_len"),
    (lambda: sft_loss(torch.zeros(1, 3, 5), torch.full((1, 3), -100)), ValueError, "ignore_index"),   # was NaN
    (lambda: sft_loss(torch.zeros(1, 3, 5), torch.full((1, 3), 7)), ValueError, "vocabulary"),
    (lambda: sft_loss(torch.zeros(1, 3, 5), torch.zeros(1, 3)), TypeError, "labels"),
    (lambda: sft_loss(torch.zeros(3, 5), torch.zeros(1, 3, dtype=torch.long)), ValueError, "logits"),
    (lambda: collate_sft([([1, 2], [1, 2])], pad_id=-1), ValueError, "pad_id"),
    (lambda: collate_sft([([1, -2], [1, 2])]), TypeError, "ids"),
])
def test_bad_inputs(call, err, match):
    with pytest.raises(err, match=match):
        call()


# ---- sft_microbatch_step: autograd oracles for normalisation and accumulation -------------

def _policy_case(seed=0, B=6, T=5, V=7, d=4):
    """A linear 'policy' W (V, d) on fixed features: log-probs (B, T) of fixed targets."""
    g = torch.Generator().manual_seed(seed)
    feats = torch.randn(B, T, d, generator=g, dtype=torch.float64)
    targets = torch.randint(0, V, (B, T), generator=g)
    lengths = torch.tensor([1, 5, 2, 4, 3, 5])[:B]               # ragged responses
    mask = torch.arange(T) < lengths[:, None]
    W = torch.randn(V, d, generator=g, dtype=torch.float64, requires_grad=True)

    def logp(rows):
        lp = (feats[rows] @ W.T).log_softmax(-1)
        return lp.gather(-1, targets[rows, :, None])[..., 0]

    return W, logp, mask, feats, targets


@pytest.mark.parametrize("C", [1.0, 4.0])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_accumulated_microbatches_equal_one_big_batch(k, C):
    W, logp, mask, _, _ = _policy_case()
    B = mask.size(0)
    # oracle: the big batch's loss written out, -sum(m log p) / (C B), differentiated by autograd
    (big,) = torch.autograd.grad(-(logp(range(B)) * mask).sum() / (C * B), W)
    losses = []
    for rows in torch.arange(B).chunk(k):
        loss, _ = sft_microbatch_step(logp(rows), mask[rows], k, C)
        losses.append(loss)
    assert torch.allclose(W.grad, big, atol=1e-12)
    big_loss = -(logp(range(B)) * mask).sum() / (C * B)
    assert torch.allclose(sum(losses), big_loss.detach(), atol=1e-12)


def test_tokens_normalisation_is_the_cross_entropy_and_not_accumulation_invariant():
    W, logp, mask, feats, targets = _policy_case(1)
    loss, meta = sft_microbatch_step(logp(range(6)), mask, 1, "tokens")
    logits = (feats @ W.T)[mask]
    oracle = F.cross_entropy(logits, targets[mask])               # torch's per-token mean
    assert torch.allclose(loss, oracle.detach(), atol=1e-12)
    assert torch.allclose(meta["mean_nll"], oracle.detach()) and int(meta["response_tokens"]) == 20
    (big,) = torch.autograd.grad(oracle, W)
    assert torch.allclose(W.grad, big, atol=1e-12)               # k = 1: the same gradient
    W.grad = None
    for rows in (torch.tensor([0, 2, 4]), torch.tensor([1, 3, 5])):   # 6 and 14 tokens
        sft_microbatch_step(logp(rows), mask[rows], 2, "tokens")
    assert not torch.allclose(W.grad, big, atol=1e-6)             # the documented pitfall


def test_microbatch_step_closed_form_and_mean_nll():
    lp = torch.log(torch.tensor([[0.5, 0.25, 0.1], [0.5, 1.0, 0.2]], dtype=torch.float64))
    lp.requires_grad_()
    mask = torch.tensor([[True, True, False], [True, False, False]])
    loss, meta = sft_microbatch_step(lp, mask, 4, 2.0)
    assert loss.item() == pytest.approx((3 * math.log(2) / 2 + math.log(2) / 2) / 2 / 4)
    assert meta["mean_nll"].item() == pytest.approx(4 * math.log(2) / 3)
    assert torch.equal(lp.grad, -mask.double() / (2.0 * 2 * 4))  # d loss / d log p = -m / (C B k)


@pytest.mark.parametrize("change, err, match", [
    (dict(lp=torch.zeros(2, 3)), ValueError, "no gradient"),
    (dict(lp=torch.full((2, 3), 0.5, requires_grad=True)), ValueError, "positive"),
    (dict(lp=torch.zeros(6, requires_grad=True)), ValueError, "policy_log_probs"),
    (dict(lp=torch.zeros(2, 3, dtype=torch.long)), TypeError, "policy_log_probs"),
    (dict(mask=torch.ones(2, 4, dtype=torch.bool)), ValueError, "same shape"),
    (dict(mask=torch.full((2, 3), 0.5)), ValueError, "bool"),
    (dict(mask=torch.zeros(2, 3, dtype=torch.bool)), ValueError, "selects nothing"),
    (dict(k=0), ValueError, "gradient_accumulation_steps"),
    (dict(k=2.0), TypeError, "gradient_accumulation_steps"),
    (dict(C=0.0), ValueError, "normalize_constant"),
    (dict(C="sequence"), ValueError, "normalize_constant"),
    (dict(C=None), TypeError, "normalize_constant"),
])
def test_microbatch_step_bad_input(change, err, match):
    args = dict(lp=-torch.ones(2, 3, requires_grad=True), mask=torch.ones(2, 3, dtype=torch.bool),
                k=1, C=1.0) | change
    with pytest.raises(err, match=match):
        sft_microbatch_step(args["lp"], args["mask"], args["k"], args["C"])

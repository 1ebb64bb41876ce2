"""Tests for course_llm.sft: response-only labels, zero prompt gradient, truncation."""

import pytest
import torch
import torch.nn.functional as F

from course_llm.chat import IM_END, IM_START, render_chat
from course_llm.sft import build_sft_example, sft_labels, sft_loss, truncate_conversation
from course_llm.tokenizers import BPETokenizer

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
    with pytest.raises(ValueError, match="block_size"):
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
    from course_llm.gpt import GPT, GPTConfig
    torch.manual_seed(0)
    a = build_sft_example(TOK, CHAT[1:3], 256)
    b = build_sft_example(TOK, CHAT, 256)
    x, y = collate_sft([a, b], pad_id=7)
    assert x.shape == y.shape == (2, len(b[0]))
    assert x[0, :len(a[0])].tolist() == a[0] and set(x[0, len(a[0]):].tolist()) == {7}
    assert set(y[0, len(a[1]):].tolist()) == {-100}
    model = GPT(GPTConfig.gpt2_style(vocab_size=TOK.vocab_size, block_size=256, n_layer=1, d_model=16)).eval()
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
    (lambda: build_sft_example(TOK, CHAT, 0), ValueError, "block_size"),
    (lambda: truncate_conversation(CHAT, TOK, 64, add_generation_prompt="yes"), TypeError, "add_generation_prompt"),
    (lambda: truncate_conversation(CHAT, TOK, -1), ValueError, "block_size"),
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

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

"""The shipped zoo checkpoint, checked against independent oracles: the add-k 5-gram of chapter 01
(fitted here on the same training split) and a direct full-window loss computation."""
import json
import math

import pytest
import torch
import torch.nn.functional as F

from course_llm import zoo
from course_llm.data import corpus_splits
from course_llm.gpt import GPT
from course_llm.ngram import NGramLM, perplexity

NAME = "gpt-shakespeare-char"


@pytest.fixture(scope="module")
def loaded():
    return zoo.load(NAME)


def test_names_and_types(loaded):
    assert NAME in zoo.names()
    model, tok = loaded
    assert isinstance(model, GPT) and not model.training
    assert all(p.device.type == "cpu" for p in model.parameters())
    text = "To be, or not to be: that is the question.\n"
    ids = tok.encode(text)
    assert isinstance(ids, list) and all(isinstance(i, int) for i in ids)
    assert tok.decode(ids) == text
    logits = model(torch.tensor([ids]))[0]
    assert logits.shape == (1, len(ids), model.config.vocab_size)


def test_metadata_records_the_run():
    meta = zoo.metadata(NAME)
    for key in ("command", "seed", "steps", "wall_time_s", "model_config", "train_config"):
        assert key in meta, key
    assert int(meta["steps"]) == json.loads(meta["train_config"])["max_steps"]
    assert "train/gpt_shakespeare_char.py" in meta["command"]


def test_beats_the_5gram_by_a_tenth_of_a_nat(loaded):
    model, tok = loaded
    train, val = corpus_splits("shakespeare")[:2]
    text = val[:20_000]
    five = math.log(perplexity(NGramLM(5, k=0.01).fit([list(train)]), [list(text)]))
    gpt = zoo.stream_loss(model, torch.tensor(tok.encode(text)), model.config.max_len)
    assert gpt < five - 0.1, (gpt, five)


def test_stream_loss_equals_a_direct_computation(loaded):
    model, tok = loaded
    ids = torch.tensor(tok.encode(corpus_splits("shakespeare")[1][:129]))
    with torch.no_grad():
        logits = model(ids[None, :-1])[0][0]
    direct = F.cross_entropy(logits, ids[1:]).item()
    assert zoo.stream_loss(model, ids, 128, stride=128) == pytest.approx(direct, abs=1e-5)


@pytest.mark.parametrize("bad", ["gpt", 3, None, "GPT-SHAKESPEARE-CHAR"])
def test_unknown_name_is_refused(bad):
    with pytest.raises(ValueError, match="name"):
        zoo.load(bad)


def test_stream_loss_rejects_bad_arguments(loaded):
    model, _ = loaded
    ids = torch.arange(10)
    with pytest.raises(ValueError, match="context"):
        zoo.stream_loss(model, ids, 0)
    with pytest.raises(ValueError, match="stride"):
        zoo.stream_loss(model, ids, 8, stride=9)
    with pytest.raises(ValueError, match="ids"):
        zoo.stream_loss(model, torch.tensor([model.config.vocab_size, 0]), 8)
    with pytest.raises(ValueError, match="ids"):
        zoo.stream_loss(model, torch.tensor([1]), 8)
    with pytest.raises(ValueError, match="batch_size"):
        zoo.stream_loss(model, ids, 8, batch_size=0)


def test_stream_loss_batched_equals_one_window_at_a_time(loaded):
    model, tok = loaded
    ids = torch.tensor(tok.encode(corpus_splits("shakespeare")[1][:300]))
    one = zoo.stream_loss(model, ids, 64, stride=24, batch_size=1)
    many = zoo.stream_loss(model, ids, 64, stride=24, batch_size=32)
    assert many == pytest.approx(one, abs=1e-6)
    # the brute-force oracle: every target t scored from the window that ends where stream_loss's does
    total = 0.0
    with torch.no_grad():
        for t in range(1, len(ids)):
            end = 1 + 64 if t < 1 + 64 else min(len(ids), 1 + 64 + ((t - 1 - 64) // 24 + 1) * 24)
            lo = max(0, end - 1 - 64)
            logits = model(ids[lo:t][None])[0]
            total -= torch.log_softmax(logits[0, -1], -1)[ids[t]].item()
    assert one == pytest.approx(total / (len(ids) - 1), abs=1e-5)

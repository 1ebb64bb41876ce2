"""course_llm.objectives against the deck's T5 objectives table and brute-force reconstruction."""
import random

import pytest

from course_llm.objectives import (bert_style, deshuffle, iid_noise_mask, iid_span_replace, mass_style, prefix_lm,
                                   random_spans, random_spans_noise_mask, span_corruption, token_drop)

TOKS = "Thank you for inviting me to your party last week .".split()
XYZ = lambda i: "<" + "XYZW"[i] + ">"


def test_deck_rows_with_the_deck_noise():
    # the deck's rows, with the noise positions the deck shows
    m = [t in ("for", "inviting", "last") for t in TOKS]
    assert span_corruption(TOKS, m, XYZ) == ("Thank you <X> me to your party <Y> week .".split(),
                                              "<X> for inviting <Y> last <Z>".split())
    m = [t in ("for", "inviting", "me", "your", "party", "last") for t in TOKS]
    assert span_corruption(TOKS, m, XYZ) == ("Thank you <X> to <Y> week .".split(),
                                              "<X> for inviting me <Y> your party last <Z>".split())
    assert prefix_lm(TOKS, random.Random(0), split=4) == ("Thank you for inviting".split(),
                                                         "me to your party last week .".split())


def _interleave(inputs, targets, is_sentinel):
    """Brute force: put each target span back at its sentinel."""
    spans, cur = {}, None
    for t in targets:
        if is_sentinel(t):
            cur = t; spans[cur] = []
        else:
            spans[cur].append(t)
    out = []
    for t in inputs:
        out += spans[t] if is_sentinel(t) else [t]
    return out


@pytest.mark.parametrize("seed", range(20))
def test_seeded_rows_keep_the_deck_structure(seed):
    rng = random.Random(seed)
    sent = lambda t: t.startswith("<extra_id_")
    inp, tgt = iid_span_replace(TOKS, rng, rate=0.3)
    assert _interleave(inp, tgt, sent) == TOKS and sent(tgt[-1])
    inp, tgt = random_spans(TOKS, rng, rate=0.4, mean_span=2)
    assert _interleave(inp, tgt, sent) == TOKS and sum(not sent(t) for t in tgt) == round(0.4 * len(TOKS))
    inp, tgt = token_drop(TOKS, rng, rate=0.3)
    assert sorted(inp + tgt) == sorted(TOKS) and [t for t in TOKS if t in inp] == inp
    inp, tgt = deshuffle(TOKS, rng)
    assert sorted(inp) == sorted(TOKS) and tgt == TOKS
    inp, tgt = mass_style(TOKS, rng, rate=0.3)
    assert tgt == TOKS and all(a == b or a == "<M>" for a, b in zip(inp, TOKS))
    inp, tgt = bert_style(TOKS, rng, vocab=["apple"], rate=0.3)
    assert tgt == TOKS and len(inp) == len(TOKS) and all(a in (b, "<M>", "apple") for a, b in zip(inp, TOKS))
    inp, tgt = prefix_lm(TOKS, rng)
    assert inp + tgt == TOKS and inp and tgt


@pytest.mark.parametrize("seed", range(50))
def test_random_spans_mask_counts(seed):
    rng = random.Random(seed)
    n = rng.randint(5, 60)
    m = random_spans_noise_mask(n, rng, rate=0.15, mean_span=3.0)
    n_noise = min(max(round(n * 0.15), 1), n - 1)
    assert len(m) == n and sum(m) == n_noise and not m[0]
    runs = sum(1 for i, b in enumerate(m) if b and (i == 0 or not m[i - 1]))
    assert runs == min(max(round(n_noise / 3.0), 1), n_noise, n - n_noise)


def test_bad_inputs():
    with pytest.raises(ValueError, match="noise_mask"):
        span_corruption(TOKS, [True])
    with pytest.raises(ValueError, match="rate"):
        token_drop(TOKS, random.Random(0), rate=2)
    with pytest.raises(ValueError, match="tokens"):
        deshuffle([], random.Random(0))


@pytest.mark.parametrize("bad", [
    lambda: random_spans_noise_mask(10, random.Random(0), rate=float("nan")),
    lambda: random_spans_noise_mask(10, random.Random(0), mean_span=0),
    lambda: random_spans(TOKS, random.Random(0), rate=float("nan")),
    lambda: bert_style(TOKS, random.Random(0), vocab=["x"], rate=1.5),
    lambda: token_drop(TOKS, random.Random(0), rate=float("inf")),
    lambda: prefix_lm(["a"], random.Random(0)),
    lambda: prefix_lm(TOKS, random.Random(0), split=0),
])
def test_bad_inputs_raise(bad):
    with pytest.raises((ValueError, TypeError)):
        bad()


@pytest.mark.parametrize("call, err, match", [
    (lambda: token_drop(TOKS, None), TypeError, "rng"),
    (lambda: prefix_lm(TOKS, None), TypeError, "rng"),
    (lambda: deshuffle(TOKS, "seed"), TypeError, "rng"),
    (lambda: random_spans_noise_mask(20, None), TypeError, "rng"),
    (lambda: bert_style(TOKS, random.Random(0), vocab=[]), ValueError, "vocab"),
    (lambda: bert_style(TOKS, random.Random(0), vocab="xyz"), ValueError, "vocab"),
    (lambda: span_corruption(TOKS, None), TypeError, "noise_mask"),
    (lambda: span_corruption(TOKS, [1] * len(TOKS)), TypeError, "noise_mask"),
    (lambda: iid_noise_mask(0, 0.15, random.Random(0)), ValueError, "`n`"),
    (lambda: random_spans_noise_mask(20, random.Random(0), rate=0.0), ValueError, "rate"),
    (lambda: random_spans_noise_mask(20, random.Random(0), rate=1.0), ValueError, "rate"),
    (lambda: random_spans(TOKS, random.Random(0), rate=0.0), ValueError, "rate"),
])
def test_bad_inputs_name_the_argument(call, err, match):
    with pytest.raises(err, match=match):
        call()

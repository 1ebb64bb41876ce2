"""Fine-tuning heads: oracles are transformers' BertFor* models, brute force for best_span, torch for training."""
import itertools
import os
import random

import pytest
import torch
import torch.nn as nn

os.environ["HF_HUB_OFFLINE"] = "1"
transformers = pytest.importorskip("transformers")
from course_llm.bert import BERT, minilm_path
from course_llm.bert_config import BERTConfig
from course_llm.optim import adamw  # noqa: E402
from course_llm.finetune import (SequenceClassifier, SpanQA, TokenTagger, best_span, collate,  # noqa: E402
                                 fine_tune, freeze_below)


def _hf_config(**kw):
    cfg = dict(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
               max_position_embeddings=16, attn_implementation="eager")
    cfg.update(kw)
    return transformers.BertConfig(**cfg)


def _inputs(seed=0, B=3, T=9, type_vocab=2):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, 100, (B, T), generator=g)
    tt = torch.randint(0, type_vocab, (B, T), generator=g)
    am = torch.ones(B, T, dtype=torch.long)
    am[1, 6:] = 0
    am[2, 4:] = 0
    return ids, tt, am


@pytest.mark.parametrize("num_labels", [2, 5])
def test_sequence_classifier_matches_hf(num_labels):
    torch.manual_seed(0)
    hf = transformers.BertForSequenceClassification(_hf_config(num_labels=num_labels)).eval()
    ours = SequenceClassifier.from_hf(hf)
    ids, tt, am = _inputs()
    labels = torch.arange(3) % num_labels
    with torch.no_grad():
        ref = hf(input_ids=ids, token_type_ids=tt, attention_mask=am, labels=labels)
        got = ours(ids, token_type_ids=tt, attention_mask=am)
        loss = ours.loss({"input_ids": ids, "token_type_ids": tt, "attention_mask": am, "labels": labels})
    assert got.shape == (3, num_labels)
    assert (got - ref.logits).abs().max() < 1e-5
    assert abs(loss.item() - ref.loss.item()) < 1e-5


def test_token_tagger_matches_hf():
    torch.manual_seed(1)
    hf = transformers.BertForTokenClassification(_hf_config(num_labels=4, type_vocab_size=3)).eval()
    ours = TokenTagger.from_hf(hf)
    ids, tt, am = _inputs(1, type_vocab=3)
    labels = torch.randint(0, 4, ids.shape, generator=torch.Generator().manual_seed(2))
    labels[am == 0] = -100
    labels[:, 0] = -100
    with torch.no_grad():
        ref = hf(input_ids=ids, token_type_ids=tt, attention_mask=am, labels=labels)
        got = ours(ids, token_type_ids=tt, attention_mask=am)
        loss = ours.loss({"input_ids": ids, "token_type_ids": tt, "attention_mask": am, "labels": labels})
    m = am.bool()
    assert (got - ref.logits)[m].abs().max() < 1e-5
    assert abs(loss.item() - ref.loss.item()) < 1e-5


def test_span_qa_matches_hf():
    torch.manual_seed(2)
    hf = transformers.BertForQuestionAnswering(_hf_config()).eval()
    ours = SpanQA.from_hf(hf)
    ids, tt, am = _inputs(3)
    sp, ep = torch.tensor([1, 2, 0]), torch.tensor([3, 2, 3])
    with torch.no_grad():
        ref = hf(input_ids=ids, token_type_ids=tt, attention_mask=am, start_positions=sp, end_positions=ep)
        s, e = ours(ids, token_type_ids=tt, attention_mask=am)
        loss = ours.loss({"input_ids": ids, "token_type_ids": tt, "attention_mask": am,
                          "start_positions": sp, "end_positions": ep})
    assert (s - ref.start_logits).abs().max() < 1e-5 and (e - ref.end_logits).abs().max() < 1e-5
    assert abs(loss.item() - ref.loss.item()) < 1e-5


def test_from_hf_rejects_wrong_models():
    hf = transformers.BertModel(_hf_config())
    for cls in (SequenceClassifier, TokenTagger, SpanQA):
        with pytest.raises(TypeError):
            cls.from_hf(hf)


def test_minilm_pooler_matches_hf():
    try:
        d = minilm_path()
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"all-MiniLM-L6-v2 not installed: {e}")
    tok = transformers.AutoTokenizer.from_pretrained(d)
    hf = transformers.BertModel.from_pretrained(d).eval()
    clf = SequenceClassifier.from_minilm(2).eval()
    b = tok(["A fine film.", "Not my cup of tea at all."], padding=True, return_tensors="pt")
    with torch.no_grad():
        ref = hf(**b).pooler_output
        got = clf.pooler(clf.bert(b["input_ids"], attention_mask=b["attention_mask"]))
    assert (got - ref).abs().max() < 1e-5


def _brute_span(s, e, max_len, allowed=None):
    best, arg = -float("inf"), None
    for i, j in itertools.product(range(len(s)), repeat=2):
        if i <= j < i + max_len and (allowed is None or (allowed[i] and allowed[j])):
            if s[i] + e[j] > best:
                best, arg = s[i] + e[j], (i, j)
    return arg


@pytest.mark.parametrize("seed", range(5))
def test_best_span_matches_brute_force(seed):
    rng = random.Random(seed)
    g = torch.Generator().manual_seed(seed)
    B, T = 4, rng.randint(1, 12)
    s, e = torch.randn(B, T, generator=g), torch.randn(B, T, generator=g)
    for max_len in (1, 2, 3, T + 2):
        allowed = torch.rand(B, T, generator=g) < 0.7
        allowed[:, rng.randrange(T)] = True
        for a in (None, allowed):
            i, j = best_span(s, e, max_len, a)
            assert i.shape == j.shape == (B,)
            for b in range(B):
                want = _brute_span(s[b].tolist(), e[b].tolist(), max_len, None if a is None else a[b].tolist())
                assert (i[b].item(), j[b].item()) == want
            i1, j1 = best_span(s[0], e[0], max_len, None if a is None else a[0])   # single example
            assert (int(i1), int(j1)) == (i[0].item(), j[0].item())


@pytest.mark.parametrize("poison", ["all nan", "one nan", "nan end in row 1"])
def test_best_span_refuses_nan_logits(poison):
    """Issue 31: all-NaN logits gave (0, 0); argmax treats NaN as the maximum."""
    s, e = torch.randn(2, 6), torch.randn(2, 6)
    if poison == "all nan":
        s[:], e[:] = float("nan"), float("nan")
    elif poison == "one nan":
        s[0, 3] = float("nan")
    else:
        e[1, 0] = float("nan")
    name = "end_logits" if poison.startswith("nan end") else "start_logits"
    with pytest.raises(ValueError, match=name):
        best_span(s, e, 3)
    with pytest.raises(ValueError, match=name):
        best_span(s[-1] if name == "end_logits" else s[0], e[-1] if name == "end_logits"
                  else e[0], 3)


def test_best_span_with_masked_positions():
    """-inf marks a masked position: allowed, but a row with no finite span is refused."""
    s = torch.tensor([float("-inf"), 1.0, 2.0, float("-inf")])
    e = torch.tensor([5.0, float("-inf"), 0.5, 1.0])
    assert [int(t) for t in best_span(s, e, 2)] == [2, 3]          # brute force: 2 + 1
    with pytest.raises(ValueError, match="finite"):
        best_span(torch.full((4,), float("-inf")), e, 2)
    with pytest.raises(ValueError, match="finite"):                # +inf + -inf = NaN
        best_span(torch.tensor([float("inf"), 0.0]), torch.tensor([float("-inf"), 0.0]), 1)
    with pytest.raises(TypeError, match="start_logits"):
        best_span(torch.zeros(4, dtype=torch.bool), e, 2)


def test_best_span_validates():
    with pytest.raises(ValueError, match="max_len"):
        best_span(torch.zeros(4), torch.zeros(4), 0)
    with pytest.raises(ValueError, match="same shape"):
        best_span(torch.zeros(4), torch.zeros(5), 2)
    with pytest.raises(ValueError, match="allowed"):
        best_span(torch.zeros(4), torch.zeros(4), 2, torch.zeros(4, dtype=torch.bool))
    with pytest.raises(ValueError, match="allowed"):
        best_span(torch.zeros(4), torch.zeros(4), 2, torch.ones(4))


def test_collate_pads_and_stacks():
    b = collate([{"input_ids": [5, 6, 7], "token_type_ids": [0, 0, 1], "start_positions": 1},
                 {"input_ids": [5], "token_type_ids": [0], "start_positions": 0}], pad_id=3)
    assert b["input_ids"].tolist() == [[5, 6, 7], [5, 3, 3]]
    assert b["token_type_ids"].tolist() == [[0, 0, 1], [0, 0, 0]]
    assert b["attention_mask"].tolist() == [[1, 1, 1], [1, 0, 0]]
    assert b["start_positions"].tolist() == [1, 0]
    with pytest.raises(TypeError):
        collate({"input_ids": [1]})
    with pytest.raises(TypeError, match="features"):          # was a bare len() TypeError
        collate(None)
    for bad, error in ((-1, ValueError), (2.5, TypeError), ("0", TypeError), (True, TypeError)):
        with pytest.raises(error, match="pad_id"):
            collate([{"input_ids": [1]}], pad_id=bad)


def _tiny_clf(n_layer=3):
    torch.manual_seed(0)
    bert = BERT(BERTConfig(vocab_size=30, d_model=16, n_layer=n_layer, n_head=2, d_ff=32, max_len=8))
    return SequenceClassifier(bert, 2, dropout=0.0)


def test_freeze_below_freezes_exactly_the_lower_part():
    clf = _tiny_clf()
    n = freeze_below(clf, 2)
    frozen = {k for k, p in clf.named_parameters() if not p.requires_grad}
    assert all(k.startswith(("bert.tok_emb", "bert.pos_emb", "bert.seg_emb", "bert.ln_emb", "bert.layers.0.",
                             "bert.layers.1.")) for k in frozen)
    assert any(k.startswith("bert.layers.1.") for k in frozen)
    assert n == sum(p.numel() for k, p in clf.named_parameters() if k not in frozen)
    emb = sum(p.numel() for m in (clf.bert.tok_emb, clf.bert.pos_emb, clf.bert.seg_emb, clf.bert.ln_emb)
              for p in m.parameters())
    assert freeze_below(clf, 0) == sum(p.numel() for p in clf.parameters()) - emb
    with pytest.raises(ValueError, match="n_layers"):
        freeze_below(clf, 4)


def test_fine_tune_learns_and_leaves_frozen_weights():
    clf = _tiny_clf()
    freeze_below(clf, 2)
    before = {k: p.detach().clone() for k, p in clf.named_parameters()}
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(3, 30, (64, 6), generator=g)
    ids[:, 0] = 1
    labels = (ids[:, 1] < 15).long()                      # depends on one token: learnable
    batches = [{"input_ids": ids[i:i + 16], "labels": labels[i:i + 16]} for i in range(0, 64, 16)]
    losses = fine_tune(clf, batches, steps=200, lr=1e-2, warmup=0.1)   # BERT's N(0, 0.02) init starts slowly
    assert len(losses) == 200 and sum(losses[-8:]) / 8 < 0.5 * sum(losses[:4]) / 4
    for k, p in clf.named_parameters():
        changed = not torch.equal(before[k], p.detach())
        assert changed == p.requires_grad, k
    assert not clf.training


def test_fine_tune_schedule_matches_cosine_schedule():
    from course_llm.optim import cosine_schedule
    lin = nn.Linear(2, 1)

    def loss_fn(m, b):
        return m(b["x"]).sum() * 0

    orig = torch.optim.AdamW.step
    lrs = []

    def spy(self, *a, **k):
        lrs.append(self.param_groups[0]["lr"])
        return orig(self, *a, **k)
    torch.optim.AdamW.step = spy
    try:
        fine_tune(lin, [{"x": torch.ones(1, 2)}], steps=10, lr=0.5, warmup=0.2, loss_fn=loss_fn)
    finally:
        torch.optim.AdamW.step = orig
    assert lrs == [cosine_schedule(k, 10, 2, 0.5, 0.0) for k in range(10)]


def test_inputs_are_validated():
    bert = BERT(BERTConfig(vocab_size=30, d_model=16, n_layer=1, n_head=2, d_ff=32, max_len=8))
    with pytest.raises(TypeError, match="bert"):
        SequenceClassifier(nn.Linear(2, 2), 2)
    with pytest.raises(ValueError, match="n_classes"):
        SequenceClassifier(bert, 0)
    with pytest.raises(ValueError, match="pool"):
        SequenceClassifier(bert, 2, pool="max")
    with pytest.raises(ValueError, match="n_tags"):
        TokenTagger(bert, 0)
    with pytest.raises(ValueError, match="dropout"):
        SequenceClassifier(bert, 2, dropout=1.0)
    with pytest.raises(ValueError, match="dropout"):
        TokenTagger(bert, 2, dropout=float("nan"))
    with pytest.raises(TypeError, match="max_len"):
        best_span(torch.zeros(4), torch.zeros(4), 2.0)
    with pytest.raises(TypeError, match="n_layers"):
        freeze_below(SequenceClassifier(bert, 2), 0.5)
    with pytest.raises(ValueError, match="steps"):
        fine_tune(SpanQA(bert), [{"input_ids": torch.ones(1, 2, dtype=torch.long)}], steps=0, lr=1e-3)


def test_fine_tune_equals_a_plain_adamw_loop():
    """The oracle: torch's AdamW stepped by hand with the closed-form warm-up + cosine rate."""
    import math
    torch.manual_seed(0)
    batches = [{"x": torch.randn(8, 3)} for _ in range(3)]
    mse = lambda m, b: ((m(b["x"]) - b["x"].sum(1, keepdim=True)) ** 2).mean()
    torch.manual_seed(1)
    lin = nn.Linear(3, 1)
    torch.manual_seed(1)
    ref = nn.Linear(3, 1)
    losses = fine_tune(lin, batches, steps=12, lr=0.05, warmup=0.25, weight_decay=0.1, max_grad_norm=0.5,
                       loss_fn=mse)
    fused = adamw(ref.parameters()).defaults["fused"]      # fit's optimizer: the same kernel
    opt = torch.optim.AdamW([{"params": [ref.weight], "weight_decay": 0.1},
                             {"params": [ref.bias], "weight_decay": 0.0}], lr=0.05, fused=fused)
    want = []
    for k in range(12):
        rate = 0.05 * (k + 1) / 3 if k < 3 else 0.05 * 0.5 * (1 + math.cos(math.pi * (k - 3) / 9))
        for g in opt.param_groups:
            g["lr"] = rate
        loss = mse(ref, batches[k % 3])
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(ref.parameters(), 0.5)
        opt.step()
        want.append(loss.item())
    assert losses == want
    assert torch.equal(lin.weight, ref.weight) and torch.equal(lin.bias, ref.bias)
    assert not lin.training


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(steps=0), ValueError, "steps"), (dict(steps=True), TypeError, "steps"),
    (dict(steps=2.0), TypeError, "steps"),
    (dict(lr=float("nan")), ValueError, "lr"), (dict(lr=0.0), ValueError, "lr"),
    (dict(lr=-1e-3), ValueError, "lr"),
    (dict(warmup=float("nan")), ValueError, "warmup"), (dict(warmup=1.5), ValueError, "warmup"),
    (dict(max_grad_norm=0.0), ValueError, "max_grad_norm"),
    (dict(max_grad_norm=float("inf")), ValueError, "max_grad_norm"),
    (dict(weight_decay=-0.1), ValueError, "weight_decay"),
    (dict(weight_decay=float("nan")), ValueError, "weight_decay"),
    (dict(batches=[]), ValueError, "batches"), (dict(batches={"x": 1}), ValueError, "batches"),
    (dict(batches=[torch.ones(2)]), ValueError, "batches"),
    (dict(loss_fn=3), TypeError, "loss_fn"),
])
def test_fine_tune_rejects_bad_arguments(kwargs, error, match):
    mse = lambda m, b: m(b["x"]).pow(2).mean()
    args = dict(batches=[{"x": torch.ones(2, 2)}], steps=2, lr=1e-3, loss_fn=mse)
    lin = nn.Linear(2, 1)
    with pytest.raises(error, match=match):
        fine_tune(lin, **{**args, **kwargs})


def test_fine_tune_needs_a_loss():
    with pytest.raises(TypeError, match="loss_fn"):
        fine_tune(nn.Linear(2, 1), [{"x": torch.ones(2, 2)}], steps=1, lr=1e-3)


def test_pooler_still_importable_from_finetune():
    """Pooler moved to course_llm.bert (BERT's pooler); finetune re-exports it."""
    from course_llm import bert, finetune
    assert finetune.Pooler is bert.Pooler

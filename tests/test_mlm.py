"""Tests of course_llm.mlm. Oracles: Hugging Face `DataCollatorForLanguageModeling` (masking, exactly and
statistically) and `BertForPreTraining` (logits and loss after weight import), binomial bounds, brute force."""
import math
import os

import pytest
import torch

os.environ["HF_HUB_OFFLINE"] = "1"
transformers = pytest.importorskip("transformers")
from course_llm.bert_config import BERTConfig
from course_llm.mlm import BERTForPreTraining, mask_tokens, pretraining_loss  # noqa: E402
from course_llm.sentence_pairs import nsp_pairs, pack_pairs  # noqa: E402

transformers.logging.set_verbosity_error()
V, PAD, UNK, CLS, SEP, MASK = 100, 0, 1, 2, 3, 4
SPECIAL = (PAD, CLS, SEP)


@pytest.fixture(scope="module")
def collator(tmp_path_factory):
    d = tmp_path_factory.mktemp("vocab")
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(V - 5)]
    (d / "vocab.txt").write_text("\n".join(words) + "\n")
    tok = transformers.BertTokenizer(str(d / "vocab.txt"))
    assert len(tok) == V and tok.mask_token_id == MASK
    return transformers.DataCollatorForLanguageModeling(tok, mlm_probability=0.15)


def _batch(B=64, T=40, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, V, (B, T), generator=g)
    ids[:, 0], ids[:, T // 2], ids[:, -1] = CLS, SEP, SEP
    ids[: B // 4, -8:] = PAD
    return ids


def _hf(collator, ids, seed):
    collator.generator = torch.Generator().manual_seed(seed)
    return collator.torch_mask_tokens(ids.clone(), special_tokens_mask=torch.isin(ids, torch.tensor(SPECIAL)))


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_mask_tokens_same_draws_as_hf(collator, seed):
    ids = _batch(seed=seed)
    hx, hy = _hf(collator, ids, seed)
    x, y = mask_tokens(ids, V, MASK, SPECIAL, 0.15, torch.Generator().manual_seed(seed))
    assert torch.equal(x, hx) and torch.equal(y, hy)


def _rates(ids, x, y):
    sel = y != -100
    k = sel.sum().item()
    return {"selected": sel.sum().item() / (~torch.isin(ids, torch.tensor(SPECIAL))).sum().item(),
            "mask": (x[sel] == MASK).sum().item() / k,
            "random": ((x != ids) & (x != MASK))[sel].sum().item() / k,
            "kept": (x == ids)[sel].sum().item() / k}, k


def test_mask_tokens_rates_match_hf_statistically(collator):
    ids = _batch(B=512, T=128, seed=3)
    n = (~torch.isin(ids, torch.tensor(SPECIAL))).sum().item()
    ours, k1 = _rates(ids, *mask_tokens(ids, V, MASK, SPECIAL, generator=torch.Generator().manual_seed(11)))
    ref, k2 = _rates(ids, *_hf(collator, ids, 12))                # a different seed: independent samples
    expected = {"selected": 0.15, "mask": 0.8, "random": 0.1 * (1 - 1 / V), "kept": 0.1 + 0.1 / V}
    for key, p in expected.items():
        n1, n2 = (n, n) if key == "selected" else (k1, k2)
        # two-sample z-test of our rate against transformers', and each against the closed form
        se = math.sqrt(p * (1 - p) * (1 / n1 + 1 / n2))
        assert abs(ours[key] - ref[key]) < 5 * se, key
        assert abs(ours[key] - p) < 5 * math.sqrt(p * (1 - p) / n1), key
        assert abs(ref[key] - p) < 5 * math.sqrt(p * (1 - p) / n2), key


def test_random_tokens_are_uniform():
    ids = torch.full((2000, 100), 10)                               # every token is id 10 of 11
    x, y = mask_tokens(ids, 11, 4, (), 0.5, torch.Generator().manual_seed(0))
    rnd = x[(y != -100) & (x != 10) & (x != 4)]                     # random replacements (a random 10 looks
    counts = torch.bincount(rnd, minlength=10).double()[[0, 1, 2, 3, 5, 6, 7, 8, 9]]   # kept, a random 4 masked)
    expected = counts.sum() / 9
    chi2 = ((counts - expected) ** 2 / expected).sum().item()
    assert chi2 < 26.12                                             # chi-square, 8 dof, p = 0.001
    k, p = int((y != -100).sum()), 0.1 * 9 / 11                     # random, and not 4 or 10: 0.1 * 9/11 of selected
    assert abs(len(rnd) - p * k) < 5 * math.sqrt(k * p * (1 - p))


def test_mask_tokens_structure():
    ids = _batch(B=32, T=50, seed=5)
    before = ids.clone()
    x, y = mask_tokens(ids, V, MASK, SPECIAL, 0.4, torch.Generator().manual_seed(2))
    assert torch.equal(ids, before)                                 # input untouched
    sel = y != -100
    assert torch.equal(y[sel], ids[sel])                            # labels = originals at selected positions
    assert torch.equal(x[~sel], ids[~sel])                          # unselected inputs unchanged
    assert not (sel & torch.isin(ids, torch.tensor(SPECIAL))).any()
    assert ((x[sel] == MASK) | (x[sel] >= 0) & (x[sel] < V)).all()
    x1, _ = mask_tokens(ids, V, MASK, SPECIAL, 1.0, torch.Generator().manual_seed(0))
    spec = torch.isin(ids, torch.tensor(SPECIAL))
    assert torch.equal(x1[spec], ids[spec])
    x0, y0 = mask_tokens(ids, V, MASK, SPECIAL, 0.0)
    assert torch.equal(x0, ids) and (y0 == -100).all()


def test_mask_tokens_validation():
    ids = _batch(B=2, T=8)
    with pytest.raises(TypeError, match="input_ids"):
        mask_tokens(ids.float(), V, MASK)
    with pytest.raises(ValueError, match="mask_id"):
        mask_tokens(ids, V, V)
    with pytest.raises(ValueError, match="mlm_probability"):
        mask_tokens(ids, V, MASK, mlm_probability=1.5)
    with pytest.raises(ValueError, match="vocab_size"):
        mask_tokens(ids, 0, MASK)


@pytest.mark.parametrize("cfg", [dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64),
                                 dict(hidden_size=24, num_hidden_layers=1, num_attention_heads=3, intermediate_size=40,
                                      type_vocab_size=3)])
def test_pretraining_parity_with_hf(cfg):
    torch.manual_seed(0)
    hc = transformers.BertConfig(vocab_size=V, max_position_embeddings=32, attn_implementation="eager", **cfg)
    hf = transformers.BertForPreTraining(hc).eval()
    with torch.no_grad():
        for p in hf.parameters():                                  # break HF's zero/one initial values
            p.add_(0.05 * torch.randn_like(p))
    ours = BERTForPreTraining.from_hf(hf)
    assert ours.mlm.decoder.weight is ours.bert.tok_emb.weight
    batch = pack_pairs(nsp_pairs([[i, i + 5, i + 9] for i in range(5, 60)], 6, torch.Generator().manual_seed(0)),
                       16, CLS, SEP, PAD)
    batch["attention_mask"][0, -2:] = 0
    x, y = mask_tokens(batch["input_ids"], V, MASK, SPECIAL, 0.3, torch.Generator().manual_seed(0))
    tt = batch["token_type_ids"] % hc.type_vocab_size
    with torch.no_grad():
        mlm, nsp = ours(x, tt, batch["attention_mask"])
        ref = hf(input_ids=x, token_type_ids=tt, attention_mask=batch["attention_mask"], labels=y,
                 next_sentence_label=batch["next_sentence_label"])
        loss = pretraining_loss(mlm, nsp, y, batch["next_sentence_label"])
        sel = y != -100
        mlm_sel, _ = ours(x, tt, batch["attention_mask"], sel)
    real = batch["attention_mask"].bool()
    assert (mlm - ref.prediction_logits)[real].abs().max() < 1e-5
    assert (nsp - ref.seq_relationship_logits).abs().max() < 1e-5
    assert abs(loss.item() - ref.loss.item()) < 1e-5
    assert (mlm_sel - ref.prediction_logits[sel]).abs().max() < 1e-5
    assert abs(pretraining_loss(mlm_sel, nsp, y[sel], batch["next_sentence_label"]).item() - ref.loss.item()) < 1e-5


def test_pretraining_loss_closed_form_and_errors():
    mlm, nsp = torch.zeros(2, 3, 7), torch.zeros(2, 2)
    y = torch.tensor([[-100, 1, 2], [-100, -100, 3]])
    total, a, b = pretraining_loss(mlm, nsp, y, torch.tensor([0, 1]), return_parts=True)
    assert abs(a.item() - math.log(7)) < 1e-6 and abs(b.item() - math.log(2)) < 1e-6
    assert abs(total.item() - math.log(14)) < 1e-6
    with pytest.raises(ValueError, match="labels"):
        pretraining_loss(mlm, nsp, torch.full((2, 3), -100), torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="labels"):
        pretraining_loss(mlm, nsp, y[:, :2], torch.tensor([0, 1]))


def test_from_hf_rejects_other_models():
    hc = transformers.BertConfig(vocab_size=V, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                 intermediate_size=32)
    with pytest.raises(TypeError, match="BertForPreTraining"):
        BERTForPreTraining.from_hf(transformers.BertModel(hc))
    with pytest.raises(TypeError, match="config"):
        BERTForPreTraining(hc)


def test_pretraining_state_map_is_pure_and_complete():
    """pretraining_state_from_hf: the keys are exactly ours, the values are HF's tensors, and an
    untied decoder or a missing head is refused."""
    from course_llm.bert_hf import config_from_hf, pretraining_state_from_hf
    hc = transformers.BertConfig(vocab_size=V, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                 intermediate_size=32, max_position_embeddings=16)
    hf = transformers.BertForPreTraining(hc)
    config = config_from_hf(hc)
    sd = hf.state_dict()
    state = pretraining_state_from_hf(sd, config)
    assert set(state) == set(BERTForPreTraining(config).state_dict())
    assert state["nsp.classifier.weight"] is sd["cls.seq_relationship.weight"]
    assert state["mlm.decoder.bias"] is sd["cls.predictions.bias"]
    assert state["mlm.decoder.weight"] is sd["bert.embeddings.word_embeddings.weight"]
    untied = dict(sd, **{"cls.predictions.decoder.weight": torch.randn(V, 16)})
    with pytest.raises(ValueError, match="tied"):
        pretraining_state_from_hf(untied, config)
    no_pooler = {k: v for k, v in sd.items() if "pooler" not in k}
    with pytest.raises(ValueError, match="pooler"):
        pretraining_state_from_hf(no_pooler, config)


def test_init_matches_hf_statistics():
    """BERT's N(0, 0.02) initialisation: compare per-tensor std with a freshly initialised HF model."""
    hc = transformers.BertConfig(vocab_size=500, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                 intermediate_size=256, max_position_embeddings=64)
    torch.manual_seed(0)
    hf = transformers.BertForPreTraining(hc)
    ours = BERTForPreTraining(BERTConfig(vocab_size=500, d_model=64, n_layer=2, n_head=4, d_ff=256, max_len=64))
    ref = {tuple(p.shape): p.std().item() for n, p in hf.named_parameters() if p.dim() == 2}
    for n, p in ours.named_parameters():
        if p.dim() == 2:
            assert abs(p.std().item() - ref[tuple(p.shape)]) < 0.003, n
        elif "ln" not in n and "norm" not in n:
            assert (p == 0).all(), n                               # biases start at zero


@pytest.mark.parametrize("call, err, match", [
    (lambda: mask_tokens(torch.tensor([[1, -2]]), 20, 3), ValueError, "input_ids"),
    (lambda: mask_tokens(torch.tensor([[1, 25]]), 20, 3), ValueError, "input_ids"),
    (lambda: mask_tokens(torch.tensor([[1, 2]]), 20, True), TypeError, "mask_id"),
    (lambda: mask_tokens(torch.tensor([[1, 2]]), 20, 3, mlm_probability="0.2"), TypeError, "mlm_probability"),
    (lambda: mask_tokens(torch.tensor([[1, 2]]), 20, 3, mlm_probability=float("nan")), ValueError,
     "mlm_probability"),
    (lambda: mask_tokens(torch.tensor([[1, 2]]), 20, 3, special_ids=(0, -1)), ValueError, "special_ids"),
    (lambda: pretraining_loss([[0.0]], torch.zeros(1, 2), torch.tensor([0]), torch.tensor([0])), TypeError,
     "mlm_logits"),
    (lambda: pretraining_loss(torch.zeros(1, 3, 4), torch.zeros(1, 2), torch.tensor([[-100, 9, -100]]),
                              torch.tensor([0])), ValueError, "labels"),
    (lambda: pretraining_loss(torch.zeros(1, 3, 4), torch.zeros(1, 2), torch.tensor([[-100, 2, -100]]),
                              torch.tensor([2])), ValueError, "next_sentence_label"),
    (lambda: pretraining_loss(torch.zeros(1, 3, 4), torch.zeros(1, 2), torch.tensor([[-100, 2.0, -100]]),
                              torch.tensor([0])), TypeError, "labels"),
    (lambda: mask_tokens(torch.zeros(0, 6, dtype=torch.long), 20, 3), ValueError, "input_ids"),
    (lambda: pretraining_loss(torch.full((1, 3, 4), float("nan")), torch.zeros(1, 2),
                              torch.tensor([[-100, 2, -100]]), torch.tensor([0])), ValueError, "mlm_logits"),
    (lambda: pretraining_loss(torch.zeros(1, 3, 4), torch.full((1, 2), float("inf")),
                              torch.tensor([[-100, 2, -100]]), torch.tensor([0])), ValueError, "nsp_logits"),
])
def test_bad_inputs_name_the_argument(call, err, match):
    with pytest.raises(err, match=match):
        call()

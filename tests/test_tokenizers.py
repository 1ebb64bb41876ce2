"""Tests for course_llm.tokenizers: parity with tiktoken (GPT-2 and cl100k_base), round trips,
trainer equivalence, file format and bad input. Oracles: tiktoken, GPT-2's original vocab.bpe,
the naive trainer, str.replace and collections.Counter."""
import json
from collections import Counter
from functools import lru_cache

import pytest
import regex
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from course_llm.pretokenizer import Splitter
from course_llm.data import load_corpus, load_sentiment
from course_llm.bpe_files import offline_file as _offline_file
from course_llm.pretokenizer import GPT2_SPLIT_PATTERN, GPT4_SPLIT_PATTERN
from course_llm.fast_bpe import BPETokenizer
from course_llm.tokenizers import CharTokenizer, WordTokenizer
from course_llm.bpe_ranks import bpe_merge
from course_llm.bpe import chunk_counts, encode_with_merges, get_pair_counts, merge, most_frequent_pair, train_bpe, train_bpe_naive, train_merges
from course_llm.bpe_files import tiktoken_encoding

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


# Code points unassigned in Python's Unicode tables ("Cn") are left out: the `regex` package
# ships newer Unicode data than tiktoken's Rust regex, so a letter assigned since (U+3D000, say)
# is \p{L} for our split and not for tiktoken's. Surrogates and every assigned category stay in.
@FAST
@given(st.text(alphabet=st.characters(codec=None, exclude_categories=("Cn",))))
def test_parity_random(text):
    for name in NAMES:
        ours = ours_for(name)
        assert ours.encode_ordinary(text) == tiktoken_encoding(name).encode_ordinary(text)


@lru_cache(maxsize=None)
def ours_for(name):
    return BPETokenizer.from_tiktoken(name)


@lru_cache(maxsize=None)
def ranks_for(name):
    return tiktoken_encoding(name)._mergeable_ranks


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
    for chunk in regex.findall(tok.pattern, text):
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
    ranks = ranks_for("gpt2")
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
def test_merge_rejects_an_id_in_use():
    with pytest.raises(ValueError, match="new_id"):
        merge([1, 2, 0], (1, 2), 0)
    with pytest.raises(ValueError, match="new_id"):
        merge([1, 2, 3], (1, 2), 1)
    assert merge([1, 2, 3], (1, 2), 4) == [4, 3]


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
        splitter = Splitter(ours_for(name).pattern)
        assert splitter.split(text) == regex.findall(splitter.pattern, text)


def test_split_fast_path_on_corpora(shakespeare):
    reviews, _ = load_sentiment("imdb", "train")
    for name in NAMES:
        splitter = Splitter(ours_for(name).pattern)
        assert splitter.ascii is not None
        for text in [shakespeare[:200_000], "\n".join(reviews[:300])]:
            assert splitter.split(text) == regex.findall(splitter.pattern, text)


# ----- streaming: encode_iterable against tiktoken on the joined text -------------------------
STREAM_PIECES = ["a", "ab", " ", "  ", "\n", "1234", "'s", "é", "🙂", "!", "東京", "<|endoftext|>",
                 "<|endo", "ftext|>", "<|fim_prefix|>", " the", "\t", "x\u0301"]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(STREAM_PIECES), max_size=60).map("".join),
       st.lists(st.integers(0, 400), max_size=12), st.integers(1, 40))
def test_encode_iterable_random_splits(text, cut_points, buffer_chars):
    cuts = sorted({c % (len(text) + 1) for c in cut_points})
    pieces = [text[a:b] for a, b in zip([0] + cuts, cuts + [len(text)])]
    for name in NAMES:
        want = tiktoken_encoding(name).encode(text, allowed_special="all")
        got = list(ours_for(name).encode_iterable(pieces, "all", buffer_chars=buffer_chars))
        assert got == want


def test_encode_iterable_corpus_and_file(shakespeare, tmp_path):
    text = shakespeare[:50_000]
    path = tmp_path / "corpus.txt"
    path.write_text(text, encoding="utf-8")
    enc = tiktoken_encoding("cl100k_base")
    with open(path, encoding="utf-8", newline="") as f:
        got = list(ours_for("cl100k_base").encode_iterable(f, buffer_chars=1000))
    assert got == enc.encode_ordinary(text)


def test_encode_iterable_is_lazy_and_bounded():
    tok = ours_for("gpt2")
    consumed = []

    def lines():
        for k in range(100_000):               # about 2.5 MB if it were joined
            consumed.append(k)
            yield f"line {k} of a long stream\n"

    stream = tok.encode_iterable(lines(), buffer_chars=4096)
    first = [next(stream) for _ in range(10)]
    assert first == tok.encode("line 0 of a long stream\nline 1 of")[:10]
    assert len(consumed) < 500                 # it did not read the whole input
    # a cut leaves room for the longest special token (13 characters) after it
    assert tok.stream_cut("aaaa bbbb cccc dddd") == 4
    assert tok.stream_cut("aaaa  bbbb cccc dddd") == 0 and tok.stream_cut("aaaa bbbb") == 0


def test_encode_iterable_special_token_across_pieces():
    tok, enc = ours_for("cl100k_base"), tiktoken_encoding("cl100k_base")
    pieces = ["hello wor", "ld <|endof", "text|> bye"]
    assert list(tok.encode_iterable(pieces, "all", buffer_chars=1)) == enc.encode(
        "".join(pieces), allowed_special="all")
    with pytest.raises(ValueError, match="endoftext"):
        list(tok.encode_iterable(pieces, buffer_chars=1))
    # a special token with a space inside is never cut, even when the rest arrives later
    spaced = BPETokenizer({bytes([b]): b for b in range(256)}, special_tokens={"<a b>": 256})
    pieces = ["x <a", " b> y"]
    assert list(spaced.encode_iterable(pieces, "all", buffer_chars=1)) == spaced.encode(
        "x <a b> y", "all")


def test_encode_iterable_bad_input():
    tok = ours_for("gpt2")
    with pytest.raises(TypeError, match="iterable"):
        tok.encode_iterable("a str")
    with pytest.raises(TypeError, match="iterable"):
        tok.encode_iterable(42)
    with pytest.raises(ValueError, match="buffer_chars"):
        tok.encode_iterable(["a"], buffer_chars=0)
    with pytest.raises(ValueError, match="allowed_special"):
        tok.encode_iterable(["a"], allowed_special="some")
    with pytest.raises(TypeError, match="yield str"):
        list(tok.encode_iterable([b"bytes"]))


# ----- special tokens without reaching into the tokenizer -----------------------------------
def test_with_and_add_special_tokens(trained):
    before = trained.vocab_size
    copy = trained.with_special_tokens(["<|im_start|>", "<PAD>"])
    assert copy.special_tokens["<|im_start|>"] == before and copy.special_tokens["<PAD>"] == 455
    assert "<|im_start|>" not in trained.special_tokens and trained.vocab_size == before
    assert copy.encode("<|im_start|>hi", allowed_special="all")[0] == before
    assert copy.decode([before]) == "<|im_start|>"
    with pytest.raises(ValueError, match="duplicates"):
        copy.add_special_tokens(["<x>", "<x>"])
    with pytest.raises(TypeError):
        copy.add_special_tokens("<x>")


def test_train_with_repeated_bytes_decodes_every_id():
    # merges can produce the same bytes twice: both ids decode to them
    tok = BPETokenizer.train("aaaa aaaa aaa aa " * 30, 256 + 20)
    for i in range(tok.vocab_size):
        assert tok.decode_bytes([i]) == b"".join(tok.id_to_bytes(j) for j in [i])
    assert tok.vocab_size == len(tok.vocab) + len(tok.special_tokens)


# ----- bad input of the BPE functions ---------------------------------------------------------
@pytest.mark.parametrize("call, error, match", [
    (lambda: merge([1, 2], (1, 2), -1), ValueError, "new_id"),
    (lambda: merge([1, 2], (1, 2), 2.5), TypeError, "new_id"),
    (lambda: merge([1, 2], (1, -2), 5), ValueError, "pair"),
    (lambda: merge([1, 2], [1, 2], 5), TypeError, "pair"),
    (lambda: merge("ab", (1, 2), 5), TypeError, "ids"),
    (lambda: get_pair_counts({1: 2}), TypeError, "ids"),
    (lambda: get_pair_counts([1, 2], counts=[]), TypeError, "counts"),
    (lambda: most_frequent_pair({}), ValueError, "non-empty"),
    (lambda: train_merges({b"ab": 1}, -1), ValueError, "n_merges"),
    (lambda: train_merges({"ab": 1}, 2), TypeError, "bytes"),
    (lambda: train_merges({b"ab": 0}, 2), ValueError, "chunk_counts"),
    (lambda: train_merges([b"ab"], 2), TypeError, "chunk_counts"),
    (lambda: train_bpe_naive("ab", 255), ValueError, "vocab_size"),
    (lambda: train_bpe("ab", 300, pattern=3), TypeError, "pattern"),
    (lambda: encode_with_merges("ab", {}), TypeError, "data"),
    (lambda: encode_with_merges([1, 300], {}), ValueError, "data"),
    (lambda: encode_with_merges([1, -1], {}), ValueError, "data"),
    (lambda: encode_with_merges(b"ab", [((97, 98), 256)]), TypeError, "merges"),
    (lambda: bpe_merge("ab", {}), TypeError, "piece"),
    (lambda: bpe_merge(b"ab", [(b"a", 0)]), TypeError, "ranks"),
    (lambda: chunk_counts(b"ab"), TypeError, "text"),
    (lambda: Splitter(None), TypeError, "pattern"),
    (lambda: Splitter("("), ValueError, "pattern"),
    (lambda: Splitter().split(None), TypeError, "text"),
    (lambda: tiktoken_encoding(None), ValueError, "name"),
])
def test_bpe_functions_reject_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()


@pytest.mark.parametrize("call, error, match", [
    (lambda t: t.decode([[1, 2]]), TypeError, "ids"),
    (lambda t: t.decode(torch.tensor([[1, 2]])), ValueError, "1-D"),
    (lambda t: t.decode([True]), TypeError, "ids"),
    (lambda t: t.decode({1: 2}), TypeError, "ids"),
    (lambda t: t.decode_bytes(5), TypeError, "ids"),
    (lambda t: t.id_to_bytes(-1), ValueError, "out of range"),
    (lambda t: t.id_to_bytes("a"), TypeError, "int"),
    (lambda t: t.encode_ordinary(5), TypeError, "text"),
    (lambda t: t.save(5), TypeError, "path"),
    (lambda t: BPETokenizer.load(5), TypeError, "path"),
    (lambda t: BPETokenizer.train("ab", "300"), TypeError, "vocab_size"),
    (lambda t: BPETokenizer.train("ab", 300, special_tokens="<s>"), TypeError, "special_tokens"),
    (lambda t: BPETokenizer.train("ab", 300, special_tokens=["<s>", "<s>"]), ValueError, "duplicates"),
    (lambda t: BPETokenizer([], GPT4_SPLIT_PATTERN), TypeError, "ranks"),
    (lambda t: BPETokenizer(t.ranks, 5), TypeError, "pattern"),
    (lambda t: BPETokenizer(t.ranks, special_tokens=["<s>"]), TypeError, "special_tokens"),
    (lambda t: BPETokenizer(t.ranks, special_tokens={"<s>": -1}), ValueError, "special_tokens"),
    (lambda t: BPETokenizer(t.ranks, merges={(1, 10**6): 300}), ValueError, "merge"),
    (lambda t: BPETokenizer(t.ranks, merges=[(1, 2)]), TypeError, "merges"),
    (lambda t: t.stream_cut(None), TypeError, "text"),
])
def test_tokenizer_rejects_bad_input(trained, call, error, match):
    with pytest.raises(error, match=match):
        call(trained)


@pytest.mark.parametrize("call, error, match", [
    (lambda: CharTokenizer(""), ValueError, "empty"),
    (lambda: CharTokenizer(b"abc"), TypeError, "text"),
    (lambda: CharTokenizer("abc").decode([3]), ValueError, "out of range"),
    (lambda: CharTokenizer("abc").decode([-1]), ValueError, "out of range"),
    (lambda: CharTokenizer("abc").one_hot([0, 7]), ValueError, "out of range"),
    (lambda: CharTokenizer("abc", special_tokens="<s>"), TypeError, "special_tokens"),
    (lambda: WordTokenizer("a b", min_freq=True), TypeError, "min_freq"),
    (lambda: WordTokenizer("a b", min_freq=1.5), TypeError, "min_freq"),
    (lambda: WordTokenizer("a b", max_size=5), ValueError, "max_size"),
    (lambda: WordTokenizer("a b", max_size=0), ValueError, "max_size"),
    (lambda: WordTokenizer("a b").decode([100]), ValueError, "out of range"),
    (lambda: WordTokenizer("a b").encode(None), TypeError, "text"),
    (lambda: WordTokenizer.split(3), TypeError, "text"),
])
def test_char_word_reject_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_merge_accepts_bytes_and_rejects_an_id_in_use():
    """BPE starts from a text's bytes; a merged id >= 256 is fresh for any bytes object, and
    the check that new_id is unused must not ask `bytes` about an int >= 256 (ValueError)."""
    from course_llm.bpe import merge

    text = b"hello"
    # oracle: the same merge on the list of the bytes' ints
    assert merge(text, (108, 108), 300) == merge(list(text), (108, 108), 300) == [104, 101, 300, 111]
    with pytest.raises(ValueError, match="new_id"):
        merge(text, (104, 101), 111)  # 111 ('o') is already in the text

"""Tests for course_llm.bpe_ranks' fast merge path (pair_rank_table, ChunkCache): the pieces and
ids equal tiktoken's own single-piece encoder (``CoreBPE.encode_single_piece``) for byte strings
that ARE whole tokens, that are concatenations of tokens, and that are random bytes; and the
fast merge equals the readable ``_bpe_merge``. Long pieces (issue #31): the heap merges equal
tiktoken on long adversarial inputs and a brute-force merge on random ones, and their number of
rank comparisons grows as n log n, not n**2 (counted, not timed)."""
import math
import random
from functools import cache, lru_cache
from itertools import pairwise

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from course_llm.bpe_ranks import (LONG_PIECE, NO_RANK, ChunkCache, _bpe_merge, _bpe_merge_fast,
                                  _bpe_merge_heap, _bpe_merge_heap_fast, bpe_merge,
                                  pair_rank_table)
from course_llm.fast_bpe import BPETokenizer
from course_llm.bpe_files import tiktoken_encoding

NAMES = ["gpt2", "cl100k_base"]
FAST = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@lru_cache(maxsize=None)
def vocab(name):
    enc = tiktoken_encoding(name)
    ranks = enc._mergeable_ranks
    return enc, ranks, pair_rank_table(ranks), sorted(ranks, key=ranks.get), ChunkCache(ranks)


def check_piece(name, piece):
    enc, ranks, table, _, cache = vocab(name)
    want = enc._core_bpe.encode_single_piece(piece)  # tiktoken's merge, shortcut included
    try:
        text = piece.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None:  # the cache: whole-token shortcut, then the fast merge
        assert list(cache[text]) == want
    if piece not in ranks:  # the fast merge alone (tiktoken shortcuts whole tokens)
        parts = _bpe_merge_fast(piece, ranks, table)
        assert [ranks[p] for p in parts] == want
        assert parts == _bpe_merge(piece, ranks)


def test_pair_rank_table_is_the_two_byte_ranks():
    _, ranks, table, _, _ = vocab("cl100k_base")
    for a in range(256):
        for b in range(256):
            assert table[a][b] == ranks.get(bytes([a, b]), NO_RANK)


@pytest.mark.parametrize("name", NAMES)
def test_whole_tokens_and_token_pairs(name):
    tokens = vocab(name)[3]
    rng = random.Random(0)
    sample = rng.sample(tokens, 400)
    for token in sample:  # chunks that ARE whole tokens
        check_piece(name, token)
    for a, b, c in zip(sample, sample[1:], sample[2:]):  # chunks that are not (mostly)
        check_piece(name, a + b)
        check_piece(name, a + b + c)


@FAST
@given(st.binary(min_size=1, max_size=24))
def test_random_bytes(piece):
    for name in NAMES:
        check_piece(name, piece)


@FAST
@given(st.lists(st.integers(0, 99_999), min_size=1, max_size=5), st.integers(0, 3))
def test_random_token_concatenations_with_cuts(ids, cut):
    # tokens glued together, with a few bytes cut off the ends: the usual unseen chunk
    for name in NAMES:
        tokens = vocab(name)[3]
        piece = b"".join(tokens[i % len(tokens)] for i in ids)
        piece = piece[cut:] or piece
        check_piece(name, piece)


@FAST
@given(st.text(min_size=1, max_size=12))
def test_random_text_chunks(text):
    for name in NAMES:
        check_piece(name, text.encode("utf-8", errors="surrogatepass"))


def test_short_pieces_and_small_vocab():
    ranks = {bytes([b]): b for b in range(256)} | {b"ab": 256, b"abc": 257, b"bc": 258}
    table = pair_rank_table(ranks)
    for piece in [b"a", b"ab", b"abc", b"bca", b"abcabc", b"cab", b"aaa"]:
        assert _bpe_merge_fast(piece, ranks, table) == _bpe_merge(piece, ranks)
    assert ChunkCache(ranks)["abcab"] == (257, 256)


def test_pair_rank_table_bad_input():
    with pytest.raises(TypeError, match="ranks"):
        pair_rank_table([(b"ab", 1)])
    with pytest.raises(ValueError, match="bytes"):
        pair_rank_table({"ab": 1})


# ----- long pieces (issue #31): the heap merge


@cache
def tokenizer(name):
    return BPETokenizer.from_tiktoken(tiktoken_encoding(name))


def long_texts(n):
    rng = random.Random(31)
    return {
        "a": "a" * n,
        "letters": "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(n)),
        "two_byte": "\u00e9" * (n // 2),
        "three_byte": "\u4e2d\u6587" * (n // 6),
        "digits": "".join(rng.choice("0123456789") for _ in range(n)),
        "spaces": " " * n,
        "mixed": "".join(rng.choice(["ab", "\u00e9", "\u4e2d", "1", "xyz"]) for _ in range(n // 2)),
    }


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("kind", sorted(long_texts(10)))
def test_long_inputs_match_tiktoken(name, kind):
    text = long_texts(30_000)[kind]
    assert tokenizer(name).encode_ordinary(text) == tiktoken_encoding(name).encode_ordinary(text)


def test_a_200k_matches_tiktoken():
    text = "a" * 200_000  # one chunk of 200 kB: minutes with the quadratic merge
    assert tokenizer("gpt2").encode_ordinary(text) == tiktoken_encoding("gpt2").encode_ordinary(text)


@pytest.mark.parametrize("name", NAMES)
def test_long_random_bytes_match_tiktoken(name):
    rng = random.Random(7)
    for alphabet in [bytes(range(256)), b"ab \xc3\xa9\xe4\xb8\xad", b"aaab"]:
        piece = bytes(rng.choice(alphabet) for _ in range(2_000))
        check_piece(name, piece)  # the cache (valid UTF-8 only) and the list loop
        enc, ranks, table, _, _ = vocab(name)
        want = enc._core_bpe.encode_single_piece(piece)
        assert [ranks[p] for p in bpe_merge(piece, ranks)] == want
        assert [ranks[p] for p in _bpe_merge_heap_fast(piece, ranks, table)] == want


def brute_force_merge(piece, ranks):
    # the rule as stated: merge the adjacent pair of lowest rank, leftmost on ties, until none
    parts = [bytes([b]) for b in piece]
    while True:
        pairs = [(ranks[a + b], i) for i, (a, b) in enumerate(pairwise(parts))
                 if a + b in ranks]
        if not pairs:
            return parts
        _, i = min(pairs)
        parts[i:i + 2] = [parts[i] + parts[i + 1]]


@FAST
@given(st.lists(st.sampled_from(b"ab\xc3\xa9 "), max_size=200).map(bytes), st.integers(0, 2**32))
def test_heap_merges_equal_brute_force_random_vocab(piece, seed):
    rng = random.Random(seed)
    starts = rng.sample(range(len(piece) + 1), min(len(piece) + 1, 40))
    tokens = sorted({piece[i:i + rng.randint(2, 6)] for i in starts} - {b""})
    tokens = [t for t in tokens if len(t) >= 2]  # a random vocabulary of substrings
    ids = rng.sample(range(10 * len(tokens) + 1), len(tokens))
    ranks = {bytes([b]): 1000 + b for b in range(256)} | dict(zip(tokens, ids))
    want = brute_force_merge(piece, ranks)
    assert _bpe_merge_heap(piece, ranks) == want
    assert _bpe_merge_heap_fast(piece, ranks, pair_rank_table(ranks)) == want
    assert _bpe_merge(piece, ranks) == want
    assert bpe_merge(piece, ranks) == want


@FAST
@given(st.lists(st.sampled_from(b"aab \xc3\xa9the"), max_size=300).map(bytes))
def test_heap_merges_equal_list_merge_gpt2(piece):
    _, ranks, table, _, _ = vocab("gpt2")
    want = _bpe_merge(piece, ranks)
    assert _bpe_merge_heap(piece, ranks) == want
    assert _bpe_merge_heap_fast(piece, ranks, table) == want


class Counted(int):
    """An int rank that counts the comparisons made with it."""

    count = 0

    def _counted(op):
        def compare(self, other):
            Counted.count += 1
            return op(int(self), other)
        return compare

    __lt__, __gt__ = _counted(int.__lt__), _counted(int.__gt__)
    __le__, __ge__ = _counted(int.__le__), _counted(int.__ge__)
    __eq__, __ne__ = _counted(int.__eq__), _counted(int.__ne__)
    __hash__ = int.__hash__


@cache
def counted_ranks():
    return {t: Counted(r) for t, r in vocab("gpt2")[1].items()}


def comparisons(merge, n):
    Counted.count = 0
    merge("a" * n)
    return Counted.count


@pytest.mark.parametrize("path", ["bpe_merge", "ChunkCache"])
def test_long_merge_comparisons_grow_as_n_log_n(path):
    # The list loop compares every pair rank at every merge: about n**2 / 2 comparisons for
    # "a" * n (8 million at n = 4096). The heap makes O(log n) per merge.
    ranks = counted_ranks()

    def merge(text):
        return bpe_merge(text.encode(), ranks) if path == "bpe_merge" else ChunkCache(ranks)[text]

    small, large = comparisons(merge, 1024), comparisons(merge, 4096)
    assert large < 10 * 4096 * math.log2(4096), large
    assert large / small < 8, (small, large)  # a quadratic count grows 16-fold


def test_pieces_around_the_threshold():
    enc, ranks, _, _, cache = vocab("gpt2")
    for n in range(LONG_PIECE - 3, LONG_PIECE + 4):  # both sides of the switch to the heap
        for text in ["a" * n, ("ab\u00e9 " * n)[:n], "1" * n]:
            piece = text.encode()
            want = enc._core_bpe.encode_single_piece(piece)
            assert list(cache[text]) == want
            assert [ranks[p] for p in bpe_merge(piece, ranks)] == want

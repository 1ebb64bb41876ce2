"""Tests for course_llm.bpe_ranks' fast merge path (pair_rank_table, ChunkCache): the pieces and
ids equal tiktoken's own single-piece encoder (``CoreBPE.encode_single_piece``) for byte strings
that ARE whole tokens, that are concatenations of tokens, and that are random bytes; and the
fast merge equals the readable ``_bpe_merge``."""
import random
from functools import lru_cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from course_llm.bpe_ranks import (NO_RANK, ChunkCache, _bpe_merge, _bpe_merge_fast,
                                  pair_rank_table)
from course_llm.tokenizers import tiktoken_encoding

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

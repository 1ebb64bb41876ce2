"""Tests for course_llm.bpe_special: special-token cuts and stream cuts. Oracles: tiktoken on the
whole text (cl100k_base), brute-force search over cut points, and str.split."""
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course_llm.bpe_files import tiktoken_encoding
from course_llm.bpe_special import (allowed_specials, safe_segments, special_regex,
                                    special_token_bytes, split_special, stream_cut)

ENC = tiktoken_encoding("cl100k_base")
SPECIALS = {"<|endoftext|>": ENC.eot_token, "<|fim_prefix|>": 100258}
PIECES = ["a", "ab", " ", "  ", "\n", "12", "'s", "é", "🙂", "!", " the", "\t", "<|endoftext|>",
          "<|endo", "ftext|>", "<|fim_prefix|>"]
TEXT = st.lists(st.sampled_from(PIECES), max_size=40).map("".join)


def encode_parts(parts):
    return [i for k, p in enumerate(parts)
            for i in ([SPECIALS[p]] if k % 2 else ENC.encode_ordinary(p))]


@settings(max_examples=150, deadline=None)
@given(TEXT)
def test_split_special_encodes_like_tiktoken(text):
    parts = split_special(text, SPECIALS, allowed_specials("all", SPECIALS))
    assert "".join(parts) == text
    assert encode_parts(parts) == ENC.encode(text, allowed_special="all")


@settings(max_examples=100, deadline=None)
@given(TEXT)
def test_disallowed_special_raises_like_tiktoken(text):
    allowed = {"<|fim_prefix|>"}
    try:
        want = ENC.encode(text, allowed_special=allowed)
    except ValueError:
        with pytest.raises(ValueError, match="not allowed"):
            split_special(text, SPECIALS, allowed)
    else:
        assert encode_parts(split_special(text, SPECIALS, allowed)) == want


def test_special_regex_prefers_longest_like_str_split():
    names = frozenset({"<s>", "<s><s>"})
    assert special_regex(names).split("a<s><s>b") == ["a", "<s><s>", "b"]
    assert special_regex(frozenset({"<x>"})).split("1<x>2<x>3")[::2] == "1<x>2<x>3".split("<x>")


@settings(max_examples=100, deadline=None)
@given(TEXT, st.lists(st.integers(0, 300), max_size=10), st.integers(1, 30))
def test_safe_segments_give_tiktoken_ids(text, cut_points, buffer_chars):
    cuts = sorted({c % (len(text) + 1) for c in cut_points})
    pieces = [text[a:b] for a, b in zip([0] + cuts, cuts + [len(text)])]
    segments = list(safe_segments(pieces, lambda t: stream_cut(t, SPECIALS), buffer_chars))
    assert "".join(segments) == text
    got = [i for s in segments for i in ENC.encode(s, allowed_special="all")]
    assert got == ENC.encode(text, allowed_special="all")


def test_stream_cut_is_safe_for_any_continuation():
    rng = random.Random(0)
    for _ in range(200):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 12)))
        p = stream_cut(text, SPECIALS)
        if p == 0:
            continue
        for rest in ["", " x", "|>", "ftext|> y", "  ", "s"]:
            whole = text + rest
            split = (ENC.encode(whole[:p], allowed_special="all")
                     + ENC.encode(whole[p:], allowed_special="all"))
            assert split == ENC.encode(whole, allowed_special="all"), (text, p, rest)


def test_stream_cut_known_values():
    assert stream_cut("to be or  not", {}) == 5
    assert stream_cut("to be or not", SPECIALS) == 0      # room for 14 characters needed
    assert stream_cut("aaaa bbbb", {}) == 4 and stream_cut("aaaa  bbbb", {}) == 0
    assert stream_cut("to be or not", {}, cuts_at_spaces=False) == 0


def test_no_cut_inside_a_special_token_still_to_come():
    # regression: with text shorter than the longest special token, the search bound was
    # negative and wrapped around, so "<a b" could be cut off a special token "<a b c d>"
    specials = {"<a b c d>": 0}
    assert stream_cut("<a b c", specials) == 0 and stream_cut("x <a b c", specials) == 0
    pieces = ["<a b c", " d> y"]
    segments = list(safe_segments(pieces, lambda t: stream_cut(t, specials), 1))
    assert "<a b c d>" in segments[-1] or any("<a b c d>" in s for s in segments)
    assert [p for s in segments for p in split_special(s, specials, set(specials))] == \
        split_special("".join(pieces), specials, set(specials))


def test_allowed_specials_and_special_token_bytes():
    assert allowed_specials("all", SPECIALS) == set(SPECIALS)
    assert allowed_specials("none", SPECIALS) == allowed_specials(None, SPECIALS) == set()
    assert allowed_specials({"<|endoftext|>"}, SPECIALS) == {"<|endoftext|>"}
    decoder = {i: bytes([i]) for i in range(256)}
    assert special_token_bytes({"<e>": 256, "é": 300}, decoder) == {256: b"<e>", 300: "é".encode()}


@pytest.mark.parametrize("call, error, match", [
    (lambda: allowed_specials("some", SPECIALS), ValueError, "allowed_special"),
    (lambda: allowed_specials({"<nope>"}, SPECIALS), ValueError, "not special"),
    (lambda: allowed_specials(3, SPECIALS), ValueError, "allowed_special"),
    (lambda: split_special(None, SPECIALS, set()), TypeError, "text"),
    (lambda: special_regex(frozenset()), TypeError, "names"),
    (lambda: special_regex({"<s>"}), TypeError, "names"),
    (lambda: special_regex(frozenset({""})), ValueError, "names"),
    (lambda: stream_cut(None, {}), TypeError, "text"),
    (lambda: list(safe_segments(["a"], len, 0)), ValueError, "buffer_chars"),
    (lambda: list(safe_segments([b"a"], len, 1)), TypeError, "yield str"),
    (lambda: special_token_bytes([("<e>", 256)], {}), TypeError, "special_tokens"),
    (lambda: special_token_bytes({"": 256}, {}), ValueError, "non-empty"),
    (lambda: special_token_bytes({"<e>": -1}, {}), ValueError, ">= 0"),
    (lambda: special_token_bytes({"<e>": True}, {}), ValueError, ">= 0"),
    (lambda: special_token_bytes({"<e>": 5}, {5: b"x"}), ValueError, "collides"),
    (lambda: special_token_bytes({"<e>": 9, "<f>": 9}, {}), ValueError, "collides"),
])
def test_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()

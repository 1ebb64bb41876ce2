"""Tests for course_llm.bert_normalizer. Oracles: Hugging Face's Rust BertNormalizer and
BertPreTokenizer (`tokenizers`), and the Unicode character database for the character classes."""
import string
import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from course_llm.bert_normalizer import (bert_normalize, is_cjk, is_control, is_punctuation,
                                        is_whitespace, pre_tokenize)
from course_llm.data import load_corpus

tokenizers = pytest.importorskip("tokenizers")
from tokenizers import normalizers, pre_tokenizers  # noqa: E402

FAST = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# the Rust library's Unicode tables are older than Python's: compare on characters whose
# category has not changed since Unicode 3.2 (as tests/test_wordpiece.py does)
STABLE = st.characters(blacklist_categories=("Cs",)).filter(
    lambda c: unicodedata.ucd_3_2_0.category(c) == unicodedata.category(c))
TEXT = st.lists(st.one_of(STABLE, st.sampled_from([" ", "\t", "\n", "\x00", "\u200b", "é", "中",
                                                   "$", "¿", "Σ", "A"])), max_size=40).map("".join)


def rust(text, lowercase):
    norm = normalizers.BertNormalizer(lowercase=lowercase).normalize_str(text)
    return norm, [w for w, _ in pre_tokenizers.BertPreTokenizer().pre_tokenize_str(norm)]


@pytest.mark.parametrize("lowercase", [True, False])
def test_corpus_lines_match_rust(lowercase):
    lines = load_corpus("bible").splitlines()[::500] + load_corpus("shakespeare").splitlines()[::400]
    for line in lines:
        norm = bert_normalize(line, lowercase)
        assert (norm, pre_tokenize(norm)) == rust(line, lowercase)


@FAST
@given(TEXT, st.booleans())
def test_random_text_matches_rust(text, lowercase):
    norm = bert_normalize(text, lowercase)
    assert (norm, pre_tokenize(norm)) == rust(text, lowercase)


def test_character_classes_against_unicode_database():
    for cp in list(range(0x3000)) + [0x4E00, 0x9FFF, 0x20000, 0xF900, 0xE000, 0xFEFF]:
        c = chr(cp)
        cat = unicodedata.category(c)
        assert is_control(c) == (cat in ("Cc", "Cf", "Co", "Cs") and c not in "\t\n\r")
        assert is_whitespace(c) == c.isspace()
        assert is_punctuation(c) == (c in string.punctuation or cat.startswith("P"))
    assert is_cjk("中") and is_cjk("\U00020000") and not is_cjk("あ") and not is_cjk("\U0002B820")


def test_accents_and_per_character_lowercase():
    assert bert_normalize("Ça") == "ca" and bert_normalize("Ça", lowercase=False) == "Ça"
    assert bert_normalize("Ça", lowercase=False, strip_accents=True) == "Ca"
    assert bert_normalize("ΟΔΟΣ") == "οδοσ"                 # no final sigma, unlike str.lower
    assert pre_tokenize("don't") == ["don", "'", "t"]


@pytest.mark.parametrize("call, error, match", [
    (lambda: bert_normalize(None), TypeError, "text"),
    (lambda: bert_normalize(b"x"), TypeError, "text"),
    (lambda: bert_normalize("x", lowercase="yes"), TypeError, "lowercase"),
    (lambda: bert_normalize("x", strip_accents=1), TypeError, "strip_accents"),
    (lambda: pre_tokenize(None), TypeError, "text"),
    (lambda: pre_tokenize(["a"]), TypeError, "text"),
])
def test_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()

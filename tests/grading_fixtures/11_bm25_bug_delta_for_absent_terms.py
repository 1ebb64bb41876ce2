# Planted bug: the reference solution of 11_bm25 that adds delta * idf for every query term of
# the collection, also when the document lacks it (what rank_bm25's BM25Plus does).
# course-llm exercise: 11_bm25
# expect-fail: values delta k1_and_b repeated_query_terms unseen_query_terms
# expect-hint: the document does not contain
import math
from collections import Counter


def bm25_plus_scores(query, docs, k1=1.5, b=0.75, delta=1.0):
    N = len(docs)
    n = Counter(t for d in docs for t in set(d))
    avgdl = sum(len(d) for d in docs) / N
    scores = []
    for d in docs:
        f = Counter(d)
        norm = k1 * (1 - b + b * len(d) / avgdl)
        score = 0.0
        for q in query:
            if n[q]:  # BUG: should be f[q], the terms of this document
                idf = math.log((N + 1) / n[q])
                score += idf * (f[q] * (k1 + 1) / (f[q] + norm) + delta)
        scores.append(score)
    return scores

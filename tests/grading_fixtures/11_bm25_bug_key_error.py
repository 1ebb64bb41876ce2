# Planted bug: the reference solution of 11_bm25 that indexes idf[q] for every query term, raising KeyError on unseen terms.
# course-llm exercise: 11_bm25
# expect-fail: unseen_query_terms
# expect-hint: with a default
import math
from collections import Counter


def bm25_scores(query, docs, k1=1.5, b=0.75):
    N = len(docs)
    n = Counter(t for d in docs for t in set(d))
    idf = {t: math.log((N - n_t + 0.5) / (n_t + 0.5)) for t, n_t in n.items()}
    floor = 0.25 * sum(idf.values()) / len(idf)
    idf = {t: floor if v < 0 else v for t, v in idf.items()}
    avgdl = sum(len(d) for d in docs) / N
    scores = []
    for d in docs:
        f = Counter(d)
        norm = k1 * (1 - b + b * len(d) / avgdl)
        scores.append(sum(idf[q] * f[q] * (k1 + 1) / (f[q] + norm) for q in query))
    return scores

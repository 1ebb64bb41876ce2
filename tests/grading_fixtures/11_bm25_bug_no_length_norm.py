# Planted bug: the reference solution of 11_bm25 that ignores document length (as if b = 0): k1 * (1 - b + b) ....
# course-llm exercise: 11_bm25
# expect-fail: values k1_and_b repeated_query_terms unseen_query_terms common_terms_floor
# expect-hint: without length normalisation
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
        norm = k1
        scores.append(sum(idf.get(q, 0.0) * f[q] * (k1 + 1) / (f[q] + norm) for q in query))
    return scores

# Planted bug: the reference solution of 11_bm25 that idf ln(N / n_t) instead of the Okapi idf (never negative, different values).
# course-llm exercise: 11_bm25
# expect-fail: values k1_and_b repeated_query_terms unseen_query_terms common_terms_floor
# expect-hint: idf(q) = ln((N - n_q + 0.5) / (n_q + 0.5))
import math
from collections import Counter


def bm25_scores(query, docs, k1=1.5, b=0.75):
    N = len(docs)
    n = Counter(t for d in docs for t in set(d))
    idf = {t: math.log(N / n_t) for t, n_t in n.items()}
    floor = 0.25 * sum(idf.values()) / len(idf)
    idf = {t: floor if v < 0 else v for t, v in idf.items()}
    avgdl = sum(len(d) for d in docs) / N
    scores = []
    for d in docs:
        f = Counter(d)
        norm = k1 * (1 - b + b * len(d) / avgdl)
        scores.append(sum(idf.get(q, 0.0) * f[q] * (k1 + 1) / (f[q] + norm) for q in query))
    return scores

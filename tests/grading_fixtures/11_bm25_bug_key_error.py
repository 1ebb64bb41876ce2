# Planted bug: the reference solution of 11_bm25 that looks up the document frequency of
# a term in no document with a dict that lacks it (KeyError).
# course-llm exercise: 11_bm25
# expect-fail: unseen_query_terms
# expect-hint: with a default
import math
from collections import Counter


def bm25_plus_scores(query, docs, k1=1.5, b=0.75, delta=1.0):
    N = len(docs)
    n = dict(Counter(t for d in docs for t in set(d)))                      # BUG: a plain dict
    idf = {t: math.log((N + 1) / n[t]) for t in query}                      # KeyError for unseen terms
    avgdl = sum(len(d) for d in docs) / N
    scores = []
    for d in docs:
        f = Counter(d)
        norm = k1 * (1 - b + b * len(d) / avgdl)
        scores.append(sum(idf[q] * (f[q] * (k1 + 1) / (f[q] + norm) + delta) for q in query if f[q]))
    return scores

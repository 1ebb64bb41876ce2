# Planted bug: the reference solution of 11_bm25 that scores each distinct query term once.
# course-llm exercise: 11_bm25
# expect-fail: repeated_query_terms
# expect-hint: appears twice in the query
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
        for q in set(query):                                                # BUG: a repeated term counts twice
            if f[q]:
                idf = math.log((N + 1) / n[q])
                score += idf * (f[q] * (k1 + 1) / (f[q] + norm) + delta)
        scores.append(score)
    return scores

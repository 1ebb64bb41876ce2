# Planted bug: the reference solution of 11_bm25 that uses delta = 1 whatever the argument says.
# course-llm exercise: 11_bm25
# expect-fail: delta
# expect-hint: use the delta argument
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
            if f[q]:
                idf = math.log((N + 1) / n[q])
                score += idf * (f[q] * (k1 + 1) / (f[q] + norm) + 1.0)  # BUG: delta, not 1
        scores.append(score)
    return scores

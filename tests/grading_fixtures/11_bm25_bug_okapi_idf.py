# Planted bug: the reference solution of 11_bm25 that keeps Okapi's idf,
# ln((N - n + 0.5) / (n + 0.5)), which is negative for terms in more than half of the documents.
# course-llm exercise: 11_bm25
# expect-fail: values delta k1_and_b repeated_query_terms unseen_query_terms
# expect-hint: idf(q) = ln((N + 1) / n_q)
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
                idf = math.log((N - n[q] + 0.5) / (n[q] + 0.5))  # BUG: Okapi's idf
                score += idf * (f[q] * (k1 + 1) / (f[q] + norm) + delta)
        scores.append(score)
    return scores

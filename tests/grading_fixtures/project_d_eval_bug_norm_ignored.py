# Planted bug: the reference solution of project_d_eval with the per-character rule deciding by the summed scores.
# course-llm exercise: project_d_eval
# expect-fail: mc_correct_values held_out_scores
# expect-hint: score per character
import functools
import itertools
import math

import torch


@functools.lru_cache(maxsize=4)
def reference_ngrams(reference, n):
    """The set of word n-grams (tuples of n words) of `reference`, cached."""
    words = reference.split()
    return frozenset(tuple(words[i : i + n]) for i in range(len(words) - n + 1))


def ngram_overlap(text, reference, n=8):
    """Fraction of the word n-gram positions of `text` that occur in `reference`.

    Example:
        >>> ngram_overlap("a b c a b c", "x a b c y", 3)
        0.5
    """
    words = text.split()
    grams = [tuple(words[i : i + n]) for i in range(len(words) - n + 1)]
    if not grams:
        return 0.0
    seen = reference_ngrams(reference, n)
    return sum(g in seen for g in grams) / len(grams)


def clean_heldout(candidates, reference, n=8, max_overlap=0.0):
    """Indices of the candidates with overlap <= max_overlap, duplicates dropped.

    Example:
        >>> clean_heldout(["a b c", "a  b c", "q r s", "a b c d"], "b c d", 3)
        [0, 2]
    """
    kept, seen = [], set()
    for k, text in enumerate(candidates):
        key = " ".join(text.split())
        if key in seen or ngram_overlap(text, reference, n) > max_overlap:
            continue
        seen.add(key)
        kept.append(k)
    return kept


def choice_scores(logits, ids, n_prompt, n_tokens):
    """Summed log-probabilities of the choice tokens of each right-padded row.

    Example:
        >>> choice_scores(torch.zeros(1, 3, 4), torch.tensor([[0, 1, 2]]), [1], [3])
        tensor([-2.7726], dtype=torch.float64)
    """
    logp = logits.double().log_softmax(-1)  # (B, T, V)
    out = torch.zeros(len(ids), dtype=torch.float64)
    for b in range(len(ids)):
        rows = torch.arange(n_prompt[b] - 1, n_tokens[b] - 1)  # row t predicts t + 1
        out[b] = logp[b, rows, ids[b, n_prompt[b] : n_tokens[b]]].sum()
    return out


def mc_correct(scores, n_chars, answers):
    """Per item, 1 when the best choice (by sum; by score per character) is the answer.

    Example:
        >>> mc_correct([[-6.0, -4.0]], [[6, 2]], [0])
        {'correct': [0], 'correct_norm': [1]}
    """
    correct, correct_norm = [], []
    for s, lengths, answer in zip(scores, n_chars, answers):
        norm = [v / c for v, c in zip(s, lengths)]  # computed, then not used  # noqa: F841
        correct.append(int(max(range(len(s)), key=s.__getitem__) == answer))
        correct_norm.append(int(max(range(len(s)), key=s.__getitem__) == answer))
    return {"correct": correct, "correct_norm": correct_norm}


def cluster_bootstrap(scores, clusters, n_boot, alpha, seed):
    """`(mean, low, high)`: a percentile interval from resampling whole clusters.

    Example:
        >>> mean, low, high = cluster_bootstrap([1, 0, 1, 1], [0, 0, 1, 1], 200, 0.1, 0)
        >>> mean, low <= mean <= high
        (0.75, True)
    """
    x = torch.as_tensor(scores, dtype=torch.float64)
    names = sorted(set(clusters))
    where = {c: k for k, c in enumerate(names)}
    member = torch.tensor([where[c] for c in clusters])
    C = len(names)
    sums = torch.zeros(C, dtype=torch.float64).index_add_(0, member, x)
    sizes = torch.zeros(C, dtype=torch.float64).index_add_(
        0, member, torch.ones_like(x)
    )
    g = torch.Generator().manual_seed(seed)
    idx = torch.randint(C, (n_boot, C), generator=g)  # (n_boot, C) clusters
    means = sums[idx].sum(1) / sizes[idx].sum(1)
    q = torch.tensor([alpha / 2, 1 - alpha / 2], dtype=torch.float64)
    low, high = torch.quantile(means, q).tolist()
    return x.mean().item(), low, high


def sign_test(diffs):
    """Exact two-sided sign-flip p-value of the paired differences `diffs`.

    Example:
        >>> sign_test([1, 1, 1, 1, 1, 0])     # 5 of 5 the same way: 2 / 32
        0.0625
    """
    d = [float(v) for v in diffs if v != 0]
    m = len(d)
    if m == 0:
        return 1.0
    if all(abs(v) == abs(d[0]) for v in d):  # equal sizes: a binomial count
        k = sum(v > 0 for v in d)
        tail = sum(math.comb(m, i) for i in range(min(k, m - k) + 1)) / 2**m
        return min(1.0, 2 * tail)
    observed = abs(sum(d)) - 1e-9
    hits = sum(
        abs(sum(s * v for s, v in zip(signs, d))) >= observed
        for signs in itertools.product((1, -1), repeat=m)
    )
    return hits / 2**m

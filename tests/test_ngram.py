"""course_llm.ngram against brute force and closed forms."""
import itertools
import math
import random
from collections import Counter

import pytest

from course_llm.ngram import BOS, EOS, NGramLM, UniformLM, count_ngrams, perplexity


def brute_force_counts(sequences, n):
    """Slide a window over each padded sequence separately (no shared stream)."""
    out = Counter()
    for s in sequences:
        padded = [BOS] * (n - 1) + list(s) + [EOS]
        for i in range(len(padded) - n + 1):
            out[tuple(padded[i:i + n])] += 1
    return out


def random_corpus(rng, n_seq=30, alphabet="abcd"):
    return [[rng.choice(alphabet) for _ in range(rng.randint(0, 8))] for _ in range(n_seq)]


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_count_ngrams_matches_sliding_window(n):
    rng = random.Random(n)
    for _ in range(20):
        corpus = random_corpus(rng)
        assert count_ngrams(corpus, n) == brute_force_counts(corpus, n)


def test_count_total_is_one_gram_per_predicted_token():
    corpus = [list("hello"), [], list("ab")]
    for n in (1, 2, 4):
        assert sum(count_ngrams(corpus, n).values()) == sum(len(s) + 1 for s in corpus)


@pytest.mark.parametrize("n,k,lambdas", [(1, 0, None), (2, 0, None), (3, 0.5, None),
                                         (3, 0, (0.2, 0.3, 0.5)), (4, 0.1, (0.1, 0.2, 0.3, 0.4))])
def test_next_token_distribution_sums_to_one(n, k, lambdas):
    rng = random.Random(0)
    lm = NGramLM(n, k=k, lambdas=lambdas).fit(random_corpus(rng))
    assert lm.vocab[-1] == EOS and EOS in lm.vocab and BOS not in lm.vocab
    for ctx_len in range(0, n + 2):
        for ctx in itertools.product("abcd", repeat=ctx_len):
            assert math.isclose(sum(lm.next_token_probs(list(ctx)).values()), 1.0, abs_tol=1e-12)


def test_mle_is_count_ratio_and_add_k_closed_form():
    corpus = [list("abab"), list("aab")]
    counts = brute_force_counts(corpus, 2)
    ctx_total = Counter()
    for (c, _), v in counts.items():
        ctx_total[c] += v
    V = 3  # a, b, <EOS>
    mle, addk = NGramLM(2).fit(corpus), NGramLM(2, k=0.7).fit(corpus)
    for (c, u), v in counts.items():
        assert math.isclose(mle.prob(u, [c] if c != BOS else []), v / ctx_total[c])
        assert math.isclose(addk.prob(u, [c] if c != BOS else []), (v + 0.7) / (ctx_total[c] + 0.7 * V))


def test_complete_sequence_probabilities_sum_to_one():
    """Sum over all sequences up to length L plus the mass still unfinished is exactly 1."""
    lm = NGramLM(2, k=0.3).fit([list("ab"), list("b"), list("aab")])
    L = 9
    complete = sum(math.exp(lm.log_prob(list(s))) for m in range(L + 1)
                   for s in itertools.product("ab", repeat=m))
    unfinished = sum(math.prod(lm.prob(u, list(s[:i])) for i, u in enumerate(s))
                     for s in itertools.product("ab", repeat=L + 1))
    assert math.isclose(complete + unfinished, 1.0, abs_tol=1e-12)


def test_uniform_perplexity_equals_vocabulary_size():
    rng = random.Random(1)
    for size in (2, 7, 50):
        alphabet = [f"t{i}" for i in range(size)]
        u = UniformLM(alphabet)
        seqs = [[rng.choice(alphabet) for _ in range(rng.randint(0, 10))] for _ in range(20)]
        assert math.isclose(perplexity(u, seqs), size + 1)      # |V| includes <EOS>


def test_perplexity_is_exp_of_mean_nll():
    lm = NGramLM(3, k=0.2).fit([list("abcab"), list("cab")])
    seqs = [list("abc"), list("ba"), []]
    nll, n = 0.0, 0
    for s in seqs:
        for i, u in enumerate(s + [EOS]):
            nll -= math.log(lm.prob(u, s[:i]))
            n += 1
    assert math.isclose(perplexity(lm, seqs), math.exp(nll / n))


def test_unseen_ngram_under_mle_gives_infinite_perplexity():
    lm = NGramLM(2).fit([list("ab")])
    assert lm.log_prob(list("ba")) == -math.inf
    assert perplexity(lm, [list("ba")]) == math.inf


def test_sampling_is_reproducible_and_in_vocabulary():
    lm = NGramLM(3, k=0.1).fit([list("hello world"), list("held")])
    a, b = lm.sample(50, seed=3), lm.sample(50, seed=3)
    assert a == b and set(a) <= set(lm.vocab) - {EOS}


@pytest.mark.parametrize("make", [lambda: NGramLM(0), lambda: NGramLM(2, k=-1),
                                  lambda: NGramLM(2, k=float("nan")), lambda: NGramLM(2, k=float("inf")),
                                  lambda: NGramLM(2, lambdas=(float("nan"), 1.0)),
                                  lambda: NGramLM(2, lambdas=(-0.5, 1.5)),
                                  lambda: NGramLM(1).fit([["a"]]).sample(0),
                                  lambda: UniformLM([]), lambda: perplexity(UniformLM("ab"), []),
                                  lambda: NGramLM(2, lambdas=(0.5, 0.6)), lambda: NGramLM(2).fit([]),
                                  lambda: NGramLM(2).fit([[], []]), lambda: count_ngrams([["a"]], 0),
                                  lambda: NGramLM(2).fit([["a"]]).prob("z", ["a"]),
                                  lambda: NGramLM(2).fit([["a"]]).log_prob(["a", "q"]),
                                  lambda: NGramLM(2).prob("a"),
                                  lambda: NGramLM(2).fit([["a", EOS]])])
def test_bad_input_raises_value_error(make):
    with pytest.raises(ValueError):
        make()


def test_text_instead_of_sequences_is_a_type_error():
    with pytest.raises(TypeError, match="list of token sequences"):
        NGramLM(2).fit("just a string")


@pytest.mark.parametrize("make", [lambda: NGramLM(2.5), lambda: NGramLM(True), lambda: NGramLM("2"),
                                  lambda: NGramLM(2, k=True), lambda: NGramLM(2, k="1"),
                                  lambda: count_ngrams([["a"]], 2.0),
                                  lambda: NGramLM(1).fit([["a"]]).sample(True),
                                  lambda: count_ngrams(["a", 1], 2), lambda: UniformLM(5),
                                  lambda: perplexity(None, [["a"]])])
def test_wrong_types_raise_type_error(make):
    with pytest.raises(TypeError):
        make()


def test_generator_of_sequences_is_read_once():
    assert count_ngrams((list(w) for w in ["ab", "b"]), 1) == count_ngrams([["a", "b"], ["b"]], 1)


def _brute_ngrams(seqs, n):
    out = Counter()
    for s in seqs:
        padded = [BOS] * (n - 1) + list(s) + [EOS]
        for i in range(len(s) + 1):
            out[tuple(padded[i : i + n])] += 1
    return out


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_count_ngrams_equals_brute_force_on_random_sequences(n):
    rng = random.Random(n)
    seqs = [[rng.choice("abcd") for _ in range(rng.randrange(7))] for _ in range(60)]
    assert count_ngrams(seqs, n) == _brute_ngrams(seqs, n)


def test_count_ngrams_odd_tokens_and_large_vocabularies():
    seqs = [[("a", "b"), ("c", "d")], [("a", "b")]]  # tuple tokens stay whole
    assert count_ngrams(seqs, 2) == _brute_ngrams(seqs, 2)
    big = [list(range(3000)), list(range(2999, -1, -1))]  # 3000**6 overflows int64 codes
    assert count_ngrams(big, 6) == _brute_ngrams(big, 6)


def test_interpolated_fit_counts_every_order_like_count_ngrams():
    rng = random.Random(0)
    seqs = [[rng.choice("abcde") for _ in range(rng.randrange(9))] for _ in range(200)]
    lm = NGramLM(4, lambdas=(0.1, 0.2, 0.3, 0.4)).fit(seqs)
    for m in range(1, 5):
        rebuilt = {ctx + (u,): c for ctx, cs in lm.counts[m].items() for u, c in cs.items()}
        assert rebuilt == dict(count_ngrams(seqs, m))

"""course_llm.word2vec: brute-force skip-gram losses and a corpus with planted structure."""

import math

import pytest
import torch
import torch.nn.functional as F

from course_llm.word2vec import (LinearProbe, SkipGram, mean_vectors, nearest_neighbours, noise_distribution,
                                 skipgram_pairs, train_skipgram, train_skipgram_cached)


def test_pairs_brute_force():
    ids = torch.tensor([5, 6, 7, 8, 9])
    for m in (1, 2, 4, 6):
        c, o = skipgram_pairs(ids, m)
        got = sorted(zip(c.tolist(), o.tolist()))
        want = sorted((ids[l].item(), ids[l + k].item()) for l in range(5)
                      for k in range(-m, m + 1) if k != 0 and 0 <= l + k < 5)
        assert got == want


def test_full_softmax_loss_brute_force():
    torch.manual_seed(0)
    sg = SkipGram(7, 3)
    with torch.no_grad():
        sg.U.weight.normal_()
    c, o = torch.tensor([0, 3, 6, 3]), torch.tensor([1, 1, 2, 5])
    total = 0.0
    for ci, oi in zip(c.tolist(), o.tolist()):
        v = sg.V.weight[ci].tolist()
        scores = [sum(a * b for a, b in zip(sg.U.weight[w].tolist(), v)) for w in range(7)]
        total += -(scores[oi] - math.log(sum(math.exp(s) for s in scores)))
    assert math.isclose(sg.full_softmax_loss(c, o).item(), total / 4, rel_tol=1e-5)


def test_negative_sampling_loss_brute_force():
    torch.manual_seed(1)
    sg = SkipGram(6, 4)
    with torch.no_grad():
        sg.U.weight.normal_()
    c, o, neg = torch.tensor([0, 2]), torch.tensor([1, 3]), torch.tensor([[4, 5, 4], [0, 1, 5]])
    sig = lambda x: 1 / (1 + math.exp(-x))
    total = 0.0
    for i in range(2):
        v = sg.V.weight[c[i]]
        total += -math.log(sig((sg.U.weight[o[i]] @ v).item()))
        total += -sum(math.log(sig(-(sg.U.weight[w] @ v).item())) for w in neg[i].tolist())
    assert math.isclose(sg.negative_sampling_loss(c, o, neg).item(), total / 2, rel_tol=1e-5)


def test_noise_distribution():
    p = noise_distribution(torch.tensor([0] * 16 + [1]), 3)
    assert torch.allclose(p, torch.tensor([8 / 9, 1 / 9, 0.0]))


def _planted_corpus(n_sentences=1500, seed=0):
    # two groups of "animals" and "vehicles": each group has its own verbs and objects, so words
    # of the same group share contexts; the groups never share a context word.
    g = torch.Generator().manual_seed(seed)
    animals, vehicles = [0, 1, 2], [3, 4, 5]
    animal_ctx, vehicle_ctx = [6, 7, 8, 9], [10, 11, 12, 13]
    out = []
    for _ in range(n_sentences):
        if torch.rand(1, generator=g) < 0.5:
            subj, ctx = animals, animal_ctx
        else:
            subj, ctx = vehicles, vehicle_ctx
        pick = lambda xs: xs[torch.randint(len(xs), (1,), generator=g).item()]
        out += [pick(ctx), pick(subj), pick(ctx), 14]              # 14: sentence separator
    return torch.tensor(out)


@pytest.mark.parametrize("loss", ["negative", "full"])
def test_shared_contexts_give_close_vectors(loss):
    torch.manual_seed(0)
    ids = _planted_corpus()
    sg = SkipGram(15, 8)
    train_skipgram(sg, ids, window=1, steps=150, batch_size=128, lr=0.05, loss=loss,
                   generator=torch.Generator().manual_seed(0))
    v = F.normalize(sg.V.weight.detach(), dim=-1)
    cos = v @ v.T
    within = [cos[i, j].item() for grp in ([0, 1, 2], [3, 4, 5]) for i in grp for j in grp if i < j]
    across = [cos[i, j].item() for i in (0, 1, 2) for j in (3, 4, 5)]
    assert min(within) > max(across) + 0.3
    assert {i for i, _ in nearest_neighbours(sg.V.weight, 0, k=2)} == {1, 2}


def test_probe_and_mean_vectors():
    vecs = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    assert torch.allclose(mean_vectors(vecs, [torch.tensor([0, 1, 2])]), torch.tensor([[2 / 3, 2 / 3]]))
    assert LinearProbe(2)(mean_vectors(vecs, [torch.tensor([0])])).shape == (1,)
    with pytest.raises(ValueError, match="length 0"):
        mean_vectors(vecs, [torch.tensor([], dtype=torch.long)])


def test_errors():
    with pytest.raises(ValueError, match="window"):
        skipgram_pairs(torch.tensor([1, 2, 3]), 0)
    with pytest.raises(ValueError, match="at least 2"):
        skipgram_pairs(torch.tensor([1]), 1)
    with pytest.raises(ValueError, match="vocabulary"):
        SkipGram(4, 2).full_softmax_loss(torch.tensor([4]), torch.tensor([0]))
    with pytest.raises(ValueError, match="query"):
        nearest_neighbours(torch.zeros(3, 2), 3)
    with pytest.raises(ValueError, match="loss"):
        train_skipgram(SkipGram(4, 2), torch.tensor([0, 1, 2]), loss="hierarchical")


@pytest.mark.parametrize("loss", ["negative", "full"])
def test_train_skipgram_equals_a_plain_adam_loop(loss):
    """fit (AdamW, weight_decay=0) must take the same steps as torch.optim.Adam on the same draws."""
    ids = torch.randint(0, 7, (60,), generator=torch.Generator().manual_seed(0))
    torch.manual_seed(0); ours = SkipGram(7, 3)
    torch.manual_seed(0); ref = SkipGram(7, 3)
    curve = train_skipgram(ours, ids, window=2, steps=12, batch_size=16, lr=0.05, loss=loss,
                           n_negatives=3, generator=torch.Generator().manual_seed(5))
    c_all, o_all = skipgram_pairs(ids, 2)
    noise = torch.bincount(ids, minlength=7).double() ** 0.75
    noise = (noise / noise.sum()).float()
    g, opt, ref_curve = torch.Generator().manual_seed(5), torch.optim.Adam(ref.parameters(), lr=0.05), []
    for _ in range(12):
        idx = torch.randint(len(c_all), (16,), generator=g)
        if loss == "full":
            value = ref.full_softmax_loss(c_all[idx], o_all[idx])
        else:
            neg = torch.multinomial(noise, 48, replacement=True, generator=g).view(16, 3)
            value = ref.negative_sampling_loss(c_all[idx], o_all[idx], neg)
        opt.zero_grad(); value.backward(); opt.step(); ref_curve.append(value.item())
    assert max(abs(a - b) for a, b in zip(curve, ref_curve)) < 1e-5
    assert torch.allclose(ours.V.weight, ref.V.weight, atol=1e-5)


_SG = SkipGram(4, 2)
_I = torch.tensor


@pytest.mark.parametrize("make, error, match", [
    (lambda: skipgram_pairs(torch.tensor([1.0, 2.0]), 1), TypeError, "ids"),
    (lambda: skipgram_pairs(torch.tensor([1, 2]), 1.5), TypeError, "window"),
    (lambda: SkipGram(4, 0), ValueError, "dim"),
    (lambda: SkipGram(True, 2), TypeError, "vocab_size"),
    (lambda: _SG.full_softmax_loss(_I([1.0]), _I([0])), TypeError, "centre"),
    (lambda: _SG.full_softmax_loss(_I([1, 2]), _I([0])), ValueError, "equal length"),
    (lambda: _SG.full_softmax_loss(_I([-1]), _I([0])), ValueError, "vocabulary"),
    (lambda: _SG.negative_sampling_loss(_I([1, 2]), _I([0, 1]), _I([[0], [1], [2]])), ValueError, "negatives"),
    (lambda: _SG.negative_sampling_loss(_I([1]), _I([0]), _I([[4]])), ValueError, "vocabulary"),
    (lambda: _SG.negative_sampling_loss(_I([1]), _I([0]), _I([1])), ValueError, "dimensions"),
    (lambda: noise_distribution(_I([-1, 2]), 4), ValueError, "vocabulary"),
    (lambda: noise_distribution(_I([1, 2]), 4, power=float("nan")), ValueError, "power"),
    (lambda: noise_distribution(_I([], dtype=torch.long), 4), ValueError, "empty"),
    (lambda: noise_distribution(_I([1, 2]), 0), ValueError, "vocab_size"),
    (lambda: train_skipgram(SkipGram(5, 2), _I([0, 1, 2, 3]), steps=0), ValueError, "steps"),
    (lambda: train_skipgram(SkipGram(5, 2), _I([0, 1, 2, 3]), batch_size=0), ValueError, "batch_size"),
    (lambda: train_skipgram(SkipGram(5, 2), _I([0, 1, 2, 3]), n_negatives=0), ValueError, "n_negatives"),
    (lambda: train_skipgram(SkipGram(5, 2), _I([0, 1, 2, 3]), lr=float("inf")), ValueError, "lr"),
    (lambda: train_skipgram(SkipGram(3, 2), _I([0, 1, 2, 3])), ValueError, "vocabulary"),
    (lambda: train_skipgram(torch.nn.Linear(2, 2), _I([0, 1])), TypeError, "SkipGram"),
    (lambda: nearest_neighbours(torch.zeros(3, 2), 0, k=0), ValueError, "`k`"),
    (lambda: nearest_neighbours(torch.zeros(3, 2), 0, k=3), ValueError, "`k`"),
    (lambda: nearest_neighbours(torch.zeros(3, 2), -1), ValueError, "query"),
    (lambda: nearest_neighbours(torch.zeros(3), 0), ValueError, "vectors"),
    (lambda: nearest_neighbours(torch.full((3, 2), float("nan")), 0), ValueError, "NaN"),
    (lambda: nearest_neighbours(torch.tensor([[1.0, 0.0], [float("inf"), 1.0]]), 0, k=1), ValueError, "NaN or inf"),
    (lambda: LinearProbe(0), ValueError, "dim"),
    (lambda: LinearProbe(3)(torch.zeros(2, 4)), ValueError, "feats"),
    (lambda: mean_vectors(torch.zeros(3, 2), [_I([5])]), ValueError, "vocabulary"),
    (lambda: mean_vectors(torch.zeros(3, 2), []), ValueError, "non-empty"),
])
def test_bad_input_is_named(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_skipgram_pairs_rejects_negative_ids():
    with pytest.raises(ValueError, match="ids"):
        skipgram_pairs(torch.tensor([3, -1, 4]), window=1)


def test_train_skipgram_cached_loads_what_train_skipgram_trained(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_LLM_CACHE", str(tmp_path))
    ids = torch.tensor([0, 1, 2, 3, 4] * 20)
    torch.manual_seed(0)
    plain, first, again = SkipGram(5, 4), SkipGram(5, 4), SkipGram(5, 4)
    first.load_state_dict(plain.state_dict())
    again.load_state_dict(plain.state_dict())
    oracle = train_skipgram(plain, ids, steps=7, generator=torch.Generator().manual_seed(0))
    curve = train_skipgram_cached(first, ids, steps=7, generator=torch.Generator().manual_seed(0))
    assert curve == oracle and torch.equal(first.V.weight, plain.V.weight)
    (file,) = tmp_path.glob("skipgram-*.safetensors")
    g = torch.Generator().manual_seed(0)
    assert train_skipgram_cached(again, ids, steps=7, generator=g) == oracle  # loaded
    assert torch.equal(again.V.weight, plain.V.weight) and torch.equal(again.U.weight, plain.U.weight)
    file.write_bytes(b"damaged")  # a damaged file means training again, same numbers
    torch.manual_seed(0)
    fresh = SkipGram(5, 4)
    assert train_skipgram_cached(fresh, ids, steps=7, generator=torch.Generator().manual_seed(0)) == oracle


def test_train_skipgram_cached_rejects_bad_input():
    with pytest.raises(TypeError, match="generator"):
        train_skipgram_cached(SkipGram(5, 4), torch.tensor([0, 1, 2]), steps=2, generator=None)
    with pytest.raises(TypeError, match="model"):
        train_skipgram_cached(torch.nn.Linear(2, 2), torch.tensor([0, 1]), generator=torch.Generator())
    with pytest.raises(ValueError, match="ids"):
        train_skipgram_cached(SkipGram(5, 4), torch.tensor([0, 9]), generator=torch.Generator())


# Issue 31: non-finite word vectors are refused, and an id past the table names `vectors`
# (the table may be the wrong one) as well as the sequence.
@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_mean_vectors_refuses_non_finite_vectors(value):
    vectors = torch.randn(5, 3)
    vectors[4, 1] = value  # even a row no sequence reads: the table is broken
    with pytest.raises(ValueError, match="`vectors` holds NaN or inf"):
        mean_vectors(vectors, [_I([0, 1])])


def test_mean_vectors_names_vectors_for_a_short_or_empty_table():
    with pytest.raises(ValueError, match=r"`seqs\[0\]` holds token ids in \[1, 2\], but `vectors` covers 2"):
        mean_vectors(torch.randn(2, 3), [_I([1, 2])])
    with pytest.raises(ValueError, match="`vectors` is empty"):
        mean_vectors(torch.randn(0, 3), [_I([1, 2])])
    v = torch.randn(6, 3)  # oracle: the mean of the rows, by hand
    assert torch.allclose(mean_vectors(v, [_I([0, 5, 5]), _I([2])]),
                          torch.stack([(v[0] + 2 * v[5]) / 3, v[2]]))

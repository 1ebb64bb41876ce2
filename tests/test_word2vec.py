"""course_llm.word2vec: brute-force skip-gram losses and a corpus with planted structure."""

import math

import pytest
import torch
import torch.nn.functional as F

from course_llm.word2vec import (LinearProbe, SkipGram, mean_vectors, nearest_neighbours, noise_distribution,
                                 skipgram_pairs, train_skipgram)


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
    with pytest.raises(ValueError, match="word ids"):
        SkipGram(4, 2).full_softmax_loss(torch.tensor([4]), torch.tensor([0]))
    with pytest.raises(ValueError, match="query"):
        nearest_neighbours(torch.zeros(3, 2), 3)
    with pytest.raises(ValueError, match="loss"):
        train_skipgram(SkipGram(4, 2), torch.tensor([0, 1, 2]), loss="hierarchical")

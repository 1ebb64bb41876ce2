"""course_llm.probes (section 14.4): layer embeddings, silhouette and nearest class-center accuracy,
against oracles (the blocks run by hand, the definitions written as loops, scikit-learn)."""
import math

import pytest
import torch

from course_llm.probes import layer_embeddings, nearest_centroid_accuracy, silhouette


def silhouette_brute_force(x, labels):
    """The definition, one point at a time (a point alone in its class scores 0)."""
    x, y = x.double().tolist(), labels.tolist()
    total = 0.0
    for i in range(len(x)):
        same = [math.dist(x[i], x[j]) for j in range(len(x)) if y[j] == y[i] and j != i]
        if not same:
            continue
        b = min(
            sum(math.dist(x[i], x[j]) for j in range(len(x)) if y[j] == c) / y.count(c)
            for c in set(y) - {y[i]}
        )
        a = sum(same) / len(same)
        total += (b - a) / max(a, b)
    return total / len(x)


@pytest.mark.parametrize("seed,n,k,d", [(0, 9, 2, 1), (1, 17, 3, 3), (2, 24, 4, 5)])
def test_silhouette_matches_the_definition_by_brute_force(seed, n, k, d):
    g = torch.Generator().manual_seed(seed)
    y = torch.cat([torch.arange(k), torch.randint(0, k, (n - k,), generator=g)])
    x = torch.randn(n, d, generator=g) + 1.5 * y[:, None]
    assert silhouette(x, y).item() == pytest.approx(silhouette_brute_force(x, y), abs=1e-9)
    y[-1] = k + 5  # a class of one point
    assert silhouette(x, y).item() == pytest.approx(silhouette_brute_force(x, y), abs=1e-9)


def test_nearest_centroid_matches_brute_force():
    g = torch.Generator().manual_seed(3)
    x, y = torch.randn(50, 3, generator=g), torch.randint(0, 3, (50,), generator=g)
    x = x + y[:, None]
    means = {c: x[:30][y[:30] == c].mean(0) for c in y[:30].unique().tolist()}
    pred = [min(means, key=lambda c: float((row - means[c]).norm())) for row in x[30:]]
    want = sum(p == t for p, t in zip(pred, y[30:].tolist())) / 20
    assert nearest_centroid_accuracy(x[:30], y[:30], x[30:], y[30:]) == pytest.approx(want)


def test_layer_embeddings_match_an_explicit_forward():
    # oracle: the blocks run one by one by hand (BERT itself is checked against transformers
    # in tests/test_bert.py), padding left out of each mean by explicit slicing
    from course_llm.masks import padding_mask
    from course_llm.bert import BERT
    from course_llm.bert_config import BERTConfig

    torch.manual_seed(0)
    m = BERT(BERTConfig(vocab_size=100, d_model=32, n_layer=3, n_head=4, d_ff=64, max_len=16)).eval()
    ids = torch.randint(0, 100, (2, 7))
    mask = torch.tensor([[1] * 7, [1] * 4 + [0] * 3])
    with torch.no_grad():
        ours = layer_embeddings(m, ids, mask)
        x = m.ln_emb(m.tok_emb(ids) + m.pos_emb(torch.arange(7)) + m.seg_emb(torch.zeros_like(ids)))
        hidden = [x]
        for layer in m.layers:
            hidden.append(layer(hidden[-1], padding_mask(mask)))
    assert ours.shape == (4, 2, 32)
    for k, h in enumerate(hidden):
        want = torch.stack([h[0].mean(0), h[1, :4].mean(0)])
        assert (ours[k] - want).abs().max() < 1e-5
    assert not m.ln_emb._forward_hooks and not m.layers[0]._forward_hooks  # hooks removed


@pytest.mark.parametrize("seed,n,k", [(0, 12, 2), (1, 30, 3), (2, 25, 5)])
def test_silhouette_matches_sklearn(seed, n, k):
    metrics = pytest.importorskip("sklearn.metrics")
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 4, generator=g, dtype=torch.float64)
    y = torch.cat([torch.arange(k), torch.randint(0, k, (n - k,), generator=g)])
    x = x + y[:, None].double()  # some structure
    assert silhouette(x, y).item() == pytest.approx(metrics.silhouette_score(x.numpy(), y.numpy()), abs=1e-8)
    y[0] = k + 3  # a class of one point scores 0, as in scikit-learn
    assert silhouette(x, y).item() == pytest.approx(metrics.silhouette_score(x.numpy(), y.numpy()), abs=1e-8)


def test_silhouette_closed_form():
    # two pairs 10 apart: a = 1 for every point; b = (10 + 11) / 2 for the outer points 0 and 11,
    # (9 + 10) / 2 for the inner ones
    x = torch.tensor([[0.0], [1.0], [10.0], [11.0]])
    want = ((1 - 1 / 10.5) + (1 - 1 / 9.5)) / 2
    assert silhouette(x, torch.tensor([0, 0, 1, 1])).item() == pytest.approx(want, abs=1e-12)


def test_nearest_centroid_matches_sklearn():
    neighbors = pytest.importorskip("sklearn.neighbors")
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(60, 5, generator=g), torch.randint(0, 4, (60,), generator=g)
    x = x + y[:, None]
    sk = neighbors.NearestCentroid().fit(x[:40].numpy(), y[:40].numpy())
    assert nearest_centroid_accuracy(x[:40], y[:40], x[40:], y[40:]) == pytest.approx(
        sk.score(x[40:].numpy(), y[40:].numpy()), abs=1e-12)


def test_analysis_rejects_bad_inputs():
    from course_llm.bert import BERT
    from course_llm.bert_config import BERTConfig

    m = BERT(BERTConfig(vocab_size=20, d_model=8, n_layer=1, n_head=2, d_ff=16, max_len=8))
    ids, mask = torch.tensor([[1, 2, 3]]), torch.tensor([[1, 1, 0]])
    with pytest.raises(TypeError, match="model"):
        layer_embeddings(torch.nn.Linear(2, 2), ids, mask)
    with pytest.raises(ValueError, match="attention_mask"):
        layer_embeddings(m, ids, torch.tensor([[1, 1]]))
    with pytest.raises(TypeError, match="input_ids"):
        layer_embeddings(m, ids.float(), mask)
    assert not m.ln_emb._forward_hooks  # hooks removed
    x, y = torch.randn(4, 2), torch.tensor([0, 0, 1, 1])
    with pytest.raises(ValueError, match="two classes"):
        silhouette(x, torch.zeros(4, dtype=torch.long))
    with pytest.raises(ValueError, match="labels"):
        silhouette(x, torch.tensor([0, 1, 1]))
    with pytest.raises(ValueError, match=">= 0"):
        silhouette(x, torch.tensor([0, -1, 1, 1]))
    with pytest.raises(TypeError, match="labels"):
        silhouette(x, y.float())
    with pytest.raises(ValueError, match="finite"):
        silhouette(torch.tensor([[float("nan")], [0.0], [1.0], [2.0]]), y)
    with pytest.raises(ValueError, match="finite"):
        silhouette(torch.zeros(0, 2), torch.zeros(0, dtype=torch.long))
    with pytest.raises(ValueError, match="features"):
        nearest_centroid_accuracy(x, y, torch.randn(2, 3), torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="test_y"):
        nearest_centroid_accuracy(x, y, x, torch.tensor([0, 1]))

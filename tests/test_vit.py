"""course_llm.vit: patchify against a brute-force loop and F.unfold; ViT shapes and input checks;
train_classifier against a plain torch.optim.AdamW loop over the same epoch orders."""
import pytest
import torch
import torch.nn.functional as F

import copy

from course_llm.core import generator
from course_llm.vit import ViT, ViTConfig, accuracy, digits_splits, patchify, train_classifier


def patchify_loops(x, p):
    B, C, H, W = x.shape
    out = torch.empty(B, (H // p) * (W // p), C * p * p, dtype=x.dtype)
    for b in range(B):
        k = 0
        for i in range(0, H, p):
            for j in range(0, W, p):
                out[b, k] = torch.stack([x[b, c, i + r, j + s] for c in range(C) for r in range(p) for s in range(p)])
                k += 1
    return out


@pytest.mark.parametrize("shape,p", [((2, 1, 8, 8), 2), ((1, 3, 4, 6), 2), ((2, 2, 6, 6), 3), ((1, 1, 4, 4), 4)])
def test_patchify_matches_loops_and_unfold(shape, p):
    x = torch.randn(shape)
    assert torch.equal(patchify(x, p), patchify_loops(x, p))
    assert torch.equal(patchify(x, p), F.unfold(x, p, stride=p).transpose(1, 2))


def test_patchify_rejects_bad_input():
    with pytest.raises(ValueError, match="patch_size"):
        patchify(torch.zeros(1, 1, 8, 8), 3)
    with pytest.raises(ValueError, match="images"):
        patchify(torch.zeros(8, 8), 2)
    with pytest.raises(ValueError, match="patch_size"):
        patchify(torch.zeros(1, 1, 8, 8), 0)


def test_vit_shapes_and_checks():
    torch.manual_seed(0)
    model = ViT(ViTConfig(image_size=8, patch_size=2, d_model=16, n_head=2, n_layer=1, n_classes=7))
    x = torch.rand(3, 1, 8, 8)
    assert model(x).shape == (3, 7) and model.features(x).shape == (3, 16)
    assert model.pos_emb.shape == (1, 17, 16)
    with pytest.raises(ValueError, match="images"):
        model(torch.rand(3, 1, 6, 6))
    with pytest.raises(ValueError, match="patch_size"):
        ViTConfig(image_size=8, patch_size=3)
    with pytest.raises(TypeError):
        ViT({"patch_size": 2})


def test_cls_sees_every_patch():
    """Bidirectional encoder: changing any patch changes the [CLS] feature."""
    torch.manual_seed(0)
    model = ViT(ViTConfig(patch_size=4, d_model=16, n_head=2, n_layer=1)).eval()
    x = torch.rand(1, 1, 8, 8)
    base = model.features(x)
    for i, j in ((0, 0), (0, 4), (4, 0), (7, 7)):
        y = x.clone(); y[0, 0, i, j] += 1.0
        assert not torch.allclose(model.features(y), base)


def test_digits_and_accuracy():
    X_train, y_train, X_test, y_test = digits_splits()
    assert len(X_train) + len(X_test) == 1797 and X_train.dtype == torch.float32
    assert set(y_test.tolist()) == set(range(10))
    class Oracle(torch.nn.Module):                      # knows the answers: accuracy 1
        def forward(self, images):
            return F.one_hot(y_test[: len(images)], 10).float()
    assert accuracy(Oracle(), X_test, y_test, batch_size=10_000) == 1.0
    with pytest.raises(ValueError):
        digits_splits(test_fraction=1.5)


@pytest.mark.parametrize("bad", [dict(dropout=float("nan")), dict(d_model=0), dict(n_head=3), dict(patch_size=0)])
def test_bad_configs_raise(bad):
    with pytest.raises((ValueError, TypeError)):
        ViTConfig(**bad)


def test_train_classifier_equals_a_plain_adamw_loop():
    """Oracle: torch.optim.AdamW (decay on matrices only, as fit's param_groups), the same
    shuffled epochs; the per-epoch mean loss weights the short last batch by its size."""
    torch.manual_seed(0)
    X, y = torch.rand(70, 1, 8, 8), torch.arange(70) % 10
    a = ViT(ViTConfig(patch_size=4, d_model=16, n_head=2, n_layer=1))
    b = copy.deepcopy(a)
    hist = train_classifier(a, X, y, epochs=2, batch_size=32, lr=1e-2, weight_decay=0.1, seed=3)
    params = list(b.parameters())
    opt = torch.optim.AdamW([{"params": [p for p in params if p.dim() >= 2], "weight_decay": 0.1},
                             {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}],
                            lr=1e-2, fused=True)  # the kernel fit uses on CPU
    g, ref = generator(3), []
    for _ in range(2):
        order, total = torch.randperm(70, generator=g), 0.0
        for i in range(0, 70, 32):
            idx = order[i:i + 32]
            loss = F.cross_entropy(b(X[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
        ref.append(total / 70)
    assert hist == pytest.approx(ref, rel=1e-4)
    assert all(torch.allclose(p, q, atol=1e-4) for p, q in zip(a.parameters(), b.parameters()))

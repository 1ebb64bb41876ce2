"""course_llm.ssl: losses against loop formulas in float64 and F.cross_entropy; CLIP model plumbing."""
import math

import pytest
import torch
import torch.nn.functional as F

from course_llm.ssl import CLIP, clip_loss, digit_prompts, info_nce, vicreg_loss, zero_shot_classify
from course_llm.vit import ViTConfig


def cos(u, v):
    return float(u @ v / (u.norm() * v.norm()))


def nt_xent_loops(z1, z2, tau):
    z = torch.cat([z1, z2]).double()
    n2, N = len(z), len(z1)
    total = 0.0
    for i in range(n2):
        den = sum(math.exp(cos(z[i], z[k]) / tau) for k in range(n2) if k != i)
        total -= math.log(math.exp(cos(z[i], z[(i + N) % n2]) / tau) / den)
    return total / n2


@pytest.mark.parametrize("N,D,tau", [(2, 3, 0.5), (4, 2, 0.1), (6, 5, 1.0)])
def test_info_nce_matches_loops(N, D, tau):
    g = torch.Generator().manual_seed(N)
    z1, z2 = torch.randn(N, D, generator=g, dtype=torch.float64), torch.randn(N, D, generator=g, dtype=torch.float64)
    assert info_nce(z1, z2, tau).item() == pytest.approx(nt_xent_loops(z1, z2, tau), rel=1e-10)


def test_info_nce_bounds():
    z = torch.randn(5, 8, dtype=torch.float64)
    # all 2N vectors identical: uniform over the 2N - 1 others
    same = torch.ones(5, 3, dtype=torch.float64)
    assert info_nce(same, same, 0.5).item() == pytest.approx(math.log(9))
    assert info_nce(z, z, 0.01).item() < info_nce(z, torch.randn(5, 8, dtype=torch.float64), 0.01).item()


def test_clip_loss_matches_cross_entropy_and_loops():
    g = torch.Generator().manual_seed(0)
    img, txt = torch.randn(5, 4, generator=g, dtype=torch.float64), torch.randn(5, 4, generator=g, dtype=torch.float64)
    scale = 7.0
    S = torch.tensor([[scale * cos(img[i], txt[j]) for j in range(5)] for i in range(5)], dtype=torch.float64)
    rows = sum(-S[i, i] + math.log(sum(math.exp(S[i, j]) for j in range(5))) for i in range(5)) / 5
    cols = sum(-S[j, j] + math.log(sum(math.exp(S[i, j]) for i in range(5))) for j in range(5)) / 5
    assert clip_loss(img, txt, scale).item() == pytest.approx(float(rows + cols) / 2, rel=1e-10)
    labels = torch.arange(5)
    ref = (F.cross_entropy(S, labels) + F.cross_entropy(S.T, labels)) / 2
    assert clip_loss(img, txt, torch.tensor(scale)).item() == pytest.approx(ref.item(), rel=1e-10)


def vicreg_loops(z1, z2, lam, mu, nu, gamma=1.0, eps=1e-4):
    z1, z2 = z1.tolist(), z2.tolist()
    N, D = len(z1), len(z1[0])
    s = sum((z1[i][j] - z2[i][j]) ** 2 for i in range(N) for j in range(D)) / (N * D)
    def vc(z):
        m = [sum(r[j] for r in z) / N for j in range(D)]
        C = [[sum((r[j] - m[j]) * (r[k] - m[k]) for r in z) / (N - 1) for k in range(D)] for j in range(D)]
        return (sum(max(0.0, gamma - math.sqrt(C[j][j] + eps)) for j in range(D)) / D,
                sum(C[j][k] ** 2 for j in range(D) for k in range(D) if j != k) / D)
    (v1, c1), (v2, c2) = vc(z1), vc(z2)
    return lam * s + mu * (v1 + v2) + nu * (c1 + c2), s, v1 + v2, c1 + c2


@pytest.mark.parametrize("scale,weights", [(0.2, (25, 25, 1)), (1.0, (25, 25, 1)), (3.0, (1, 2, 3))])
def test_vicreg_matches_loops(scale, weights):
    g = torch.Generator().manual_seed(3)
    z1 = scale * torch.randn(7, 4, generator=g, dtype=torch.float64)
    z2 = scale * torch.randn(7, 4, generator=g, dtype=torch.float64)
    loss, terms = vicreg_loss(z1, z2, *weights, return_terms=True)
    ref, s, v, c = vicreg_loops(z1, z2, *weights)
    assert loss.item() == pytest.approx(ref, rel=1e-10)
    assert (terms["invariance"].item(), terms["variance"].item(), terms["covariance"].item()) == pytest.approx((s, v, c))


def test_bad_inputs():
    with pytest.raises(ValueError, match="same shape"):
        info_nce(torch.randn(3, 2), torch.randn(4, 2))
    with pytest.raises(ValueError, match="temperature"):
        info_nce(torch.randn(3, 2), torch.randn(3, 2), 0.0)
    with pytest.raises(ValueError, match="at least 2"):
        vicreg_loss(torch.randn(1, 2), torch.randn(1, 2))
    with pytest.raises(ValueError, match="logit_scale"):
        clip_loss(torch.randn(3, 2), torch.randn(3, 2), -1.0)
    with pytest.raises(ValueError, match="template"):
        digit_prompts("no slot")


def test_clip_model_and_zero_shot():
    torch.manual_seed(0)
    vocab = "a photo of the digit zero one two three four five six seven eight nine".split()
    model = CLIP(ViTConfig(patch_size=4, d_model=16, n_head=2, n_layer=1), vocab, d_embed=8, d_text=16)
    x = torch.rand(4, 1, 8, 8)
    assert torch.allclose(model.encode_image(x).norm(dim=1), torch.ones(4))
    # padding does not change a caption's embedding
    e_alone = model.encode_text(["a photo of the digit three"])
    e_padded = model.encode_text(["a photo of the digit three", "three"])[:1]
    assert torch.allclose(e_alone, e_padded, atol=1e-6)
    assert zero_shot_classify(model, x, digit_prompts()).shape == (4,)
    with pytest.raises(ValueError, match="unknown words"):
        model.encode_text(["a cat"])
    loss = model(x, digit_prompts()[:4])
    loss.backward()
    assert model.t.grad is not None


def _vit():
    return ViTConfig(patch_size=4, d_model=16, n_head=2, n_layer=1)


@pytest.mark.parametrize("call, err, match", [
    (lambda: info_nce(torch.zeros(4, 3, dtype=torch.long), torch.zeros(4, 3, dtype=torch.long)), TypeError, "z1"),
    (lambda: info_nce(torch.randn(4, 3), torch.randn(4, 3), temperature=float("inf")), ValueError, "temperature"),
    (lambda: info_nce(torch.randn(4, 0), torch.randn(4, 0)), ValueError, "embedding dimension"),
    (lambda: vicreg_loss(torch.randn(4, 3), torch.randn(4, 3), lam=float("nan")), ValueError, "lam"),
    (lambda: vicreg_loss(torch.randn(4, 3), torch.randn(4, 3), eps=0.0), ValueError, "eps"),
    (lambda: vicreg_loss(torch.randn(4, 3), torch.randn(4, 3), return_terms="yes"), TypeError, "return_terms"),
    (lambda: clip_loss(torch.randn(4, 3), torch.randn(4, 3), float("inf")), ValueError, "logit_scale"),
    (lambda: info_nce(torch.full((4, 3), float("nan")), torch.randn(4, 3)), ValueError, "z1"),
    (lambda: info_nce(torch.randn(4, 3), torch.full((4, 3), float("inf"))), ValueError, "z2"),
    (lambda: vicreg_loss(torch.randn(4, 3), torch.full((4, 3), float("nan"))), ValueError, "z2"),
    (lambda: clip_loss(torch.full((4, 3), float("inf")), torch.randn(4, 3), 1.0), ValueError, "image_emb"),
    (lambda: clip_loss(torch.randn(4, 3), torch.full((4, 3), float("nan")), 1.0), ValueError, "text_emb"),
    (lambda: clip_loss(torch.randn(4, 3), torch.randn(5, 3), 1.0), ValueError, "image_emb"),
    (lambda: digit_prompts(3), TypeError, "template"),
    (lambda: CLIP(_vit(), ["a"], d_embed=0), ValueError, "d_embed"),
    (lambda: CLIP(_vit(), "a b"), ValueError, "vocab"),
    (lambda: CLIP(_vit(), ["a"]).encode_text([]), TypeError, "texts"),
    (lambda: CLIP(_vit(), ["a"]).encode_text("a"), TypeError, "texts"),
    (lambda: CLIP(_vit(), ["a"])(torch.randn(2, 1, 8, 8), ["a"]), ValueError, "pair up"),
    (lambda: zero_shot_classify(torch.nn.Linear(2, 2), torch.randn(2, 1, 8, 8), ["a", "b"]), TypeError, "model"),
    (lambda: zero_shot_classify(CLIP(_vit(), ["a"]), torch.randn(2, 1, 8, 8), "ab"), ValueError, "class_prompts"),
])
def test_bad_inputs(call, err, match):
    with pytest.raises(err, match=match):
        call()


@pytest.mark.parametrize("scale", ["2.0", None, True])
def test_clip_loss_rejects_a_scale_that_is_not_a_number(scale):
    with pytest.raises(TypeError, match="logit_scale"):
        clip_loss(torch.eye(3), torch.eye(3), scale)


def test_vicreg_collapse_is_free_without_the_variance_term():
    # a constant batch: invariance and covariance are 0, the hinge alone costs 2 (gamma - sqrt(eps))
    z = torch.ones(8, 4, dtype=torch.float64)
    assert vicreg_loss(z, z, mu=0.0).item() == 0.0
    assert vicreg_loss(z, z).item() == pytest.approx(25 * 2 * (1 - math.sqrt(1e-4)), rel=1e-12)

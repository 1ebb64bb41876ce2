"""course_llm.elmo: shapes, the scalar-mix formula, the two-directional loss by brute force."""

import math

import pytest
import torch
import torch.nn.functional as F

from course_llm.elmo import ELMo, MixProbe, ScalarMix, elmo_features, reverse_padded


def test_scalar_mix_formula():
    torch.manual_seed(0)
    mix = ScalarMix(3)
    with torch.no_grad():
        mix.w.copy_(torch.tensor([0.5, -1.0, 2.0])); mix.gamma.fill_(1.7)
    hs = [torch.randn(2, 4, 6) for _ in range(3)]
    e = [math.exp(w) for w in (0.5, -1.0, 2.0)]
    s = [x / sum(e) for x in e]
    want = 1.7 * (s[0] * hs[0] + s[1] * hs[1] + s[2] * hs[2])
    assert torch.allclose(mix(hs), want, atol=1e-6)
    assert torch.allclose(ScalarMix(2)([torch.ones(3), 3 * torch.ones(3)]), 2 * torch.ones(3))
    with pytest.raises(ValueError, match="layers"):
        mix(hs[:2])


def test_shapes_and_padding():
    torch.manual_seed(1)
    elmo = ELMo(vocab_size=30, dim=5, num_layers=2)
    x = torch.randint(1, 30, (3, 7))
    layers = elmo.layers(x)
    assert len(layers) == 3 and all(h.shape == (3, 7, 10) for h in layers)
    assert torch.equal(layers[0][..., :5], layers[0][..., 5:])            # k = 0: token layer, both halves
    # a padded row gives the same states at its real positions as the row alone
    lengths = torch.tensor([7, 4, 2])
    padded = x.clone()
    padded[1, 4:] = 0; padded[2, 2:] = 0
    lp = elmo.layers(padded, lengths)
    for b, L in enumerate(lengths.tolist()):
        alone = elmo.layers(padded[b:b + 1, :L])
        for h, h_alone in zip(lp, alone):
            assert torch.allclose(h[b, :L], h_alone[0], atol=1e-6)


def test_directions_are_causal():
    torch.manual_seed(2)
    elmo = ELMo(vocab_size=20, dim=4, num_layers=2)
    x = torch.randint(1, 20, (1, 6))
    x2 = x.clone(); x2[0, 3] = (x2[0, 3] % 19) + 1
    a, b = elmo.layers(x)[-1], elmo.layers(x2)[-1]
    # forward half at positions < 3 and backward half at positions > 3 cannot see position 3
    assert torch.allclose(a[0, :3, :4], b[0, :3, :4]) and torch.allclose(a[0, 4:, 4:], b[0, 4:, 4:])
    assert not torch.allclose(a[0, 3:, :4], b[0, 3:, :4])


def test_loss_brute_force():
    torch.manual_seed(3)
    elmo = ELMo(vocab_size=12, dim=4, num_layers=1)
    x = torch.randint(1, 12, (2, 5))
    total_f = total_b = 0.0
    for row in x:
        for l in range(1, 5):      # forward: predict u_l from u_<l, run on the prefix only
            h = elmo.layers(row[None, :l])[-1][0, -1, :4]
            total_f += -F.log_softmax(elmo.out(h), -1)[row[l]].item()
        for l in range(0, 4):      # backward: predict u_l from u_>l, run on the suffix only
            h = elmo.layers(row[None, l + 1:])[-1][0, 0, 4:]
            total_b += -F.log_softmax(elmo.out(h), -1)[row[l]].item()
    want = total_f / 8 + total_b / 8
    assert math.isclose(elmo.loss(x).item(), want, rel_tol=1e-5)


def test_features_are_mean_of_layers_and_probe_mixes():
    torch.manual_seed(4)
    elmo = ELMo(vocab_size=15, dim=3, num_layers=2)
    seqs = [torch.tensor([1, 2, 3, 4]), torch.tensor([5, 6])]
    feats = elmo_features(elmo, seqs)
    assert feats.shape == (2, 3, 6)
    with torch.no_grad():
        for i, s in enumerate(seqs):
            for k, h in enumerate(elmo.layers(s[None])):
                assert torch.allclose(feats[i, k], h[0].mean(0), atol=1e-6)
    probe = MixProbe(3, 6)
    with torch.no_grad():
        mixed = probe.mix(list(feats.unbind(1)))
        assert torch.allclose(probe(feats), probe.head(mixed)[:, 0])


def test_reverse_padded_and_errors():
    x = torch.tensor([[1, 2, 3, 4], [5, 6, 0, 0]])
    r = reverse_padded(x, torch.tensor([4, 2]))
    assert r.tolist() == [[4, 3, 2, 1], [6, 5, 0, 0]]
    assert torch.equal(reverse_padded(r, torch.tensor([4, 2])), x)
    with pytest.raises(ValueError, match="padding_idx"):
        ELMo(10, 4, padding_idx=10)
    with pytest.raises(ValueError, match="time >= 1"):
        ELMo(10, 4).layers(torch.zeros(1, 0, dtype=torch.long))


def test_reverse_padded_equals_flipping_each_row():
    x = torch.randn(4, 6, 3)
    lengths = torch.tensor([6, 0, 3, 1])
    brute = torch.stack([torch.cat([row[:n].flip(0), row[n:]]) for row, n in zip(x, lengths.tolist())])
    assert torch.equal(reverse_padded(x, lengths), brute)


_E = ELMo(10, 4)


@pytest.mark.parametrize("make, error, match", [
    (lambda: reverse_padded(torch.zeros(2, 3), torch.tensor([-1, 2])), ValueError, "lengths"),
    (lambda: reverse_padded(torch.zeros(2, 3), torch.tensor([4, 2])), ValueError, "lengths"),
    (lambda: reverse_padded(torch.zeros(2, 3), torch.tensor([3])), ValueError, "lengths"),
    (lambda: reverse_padded(torch.zeros(2, 3), torch.tensor([3.0, 1.0])), TypeError, "lengths"),
    (lambda: reverse_padded(torch.zeros(3), torch.tensor([3])), ValueError, "`x`"),
    (lambda: ELMo(10, 0), ValueError, "dim"),
    (lambda: ELMo(10, 4, num_layers=0), ValueError, "num_layers"),
    (lambda: ELMo(10, 4, padding_idx=-1), ValueError, "padding_idx"),
    (lambda: _E.layers(torch.tensor([[12]])), ValueError, "vocabulary"),
    (lambda: _E.layers(torch.tensor([[-1]])), ValueError, "vocabulary"),
    (lambda: _E.layers(torch.zeros(1, 3)), TypeError, "int dtype"),
    (lambda: _E.loss(torch.tensor([[1]])), ValueError, "at least 2"),
    (lambda: _E.layers(torch.tensor([[1, 2]]), torch.tensor([3])), ValueError, "lengths"),
    (lambda: ScalarMix(0), ValueError, "num_layers"),
    (lambda: ScalarMix(1.5), TypeError, "num_layers"),
    (lambda: ScalarMix(2)([torch.ones(3), torch.ones(4)]), ValueError, "same shape"),
    (lambda: ScalarMix(2)(torch.ones(2, 3)), ValueError, "list"),
    (lambda: elmo_features(_E, []), ValueError, "non-empty"),
    (lambda: elmo_features(_E, [torch.tensor([1])], batch_size=0), ValueError, "batch_size"),
    (lambda: elmo_features(_E, [torch.tensor([1])], max_len=0), ValueError, "max_len"),
    (lambda: elmo_features(torch.nn.Linear(2, 2), [torch.tensor([1])]), TypeError, "ELMo"),
    (lambda: MixProbe(0, 3), ValueError, "num_layers"),
    (lambda: MixProbe(3, 4)(torch.zeros(2, 2, 4)), ValueError, "feats"),
])
def test_bad_input_is_named(make, error, match):
    with pytest.raises(error, match=match):
        make()


# Issue 31: reverse_padded refuses non-finite float entries by name, and a `lengths` of the
# wrong shape is reported against `x`'s batch; ELMo's layers call the unchecked kernel.
@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_reverse_padded_refuses_non_finite_x(value):
    x = torch.randn(2, 4, 3)
    x[1, 0, 2] = value
    with pytest.raises(ValueError, match="`x` holds NaN or inf"):
        reverse_padded(x, torch.tensor([4, 2]))
    assert torch.equal(reverse_padded(torch.tensor([[1, 2, 3]]), torch.tensor([2])),
                       torch.tensor([[2, 1, 3]]))  # ids are not floats: no finite test


def test_reverse_padded_names_x_when_lengths_do_not_match_its_batch():
    with pytest.raises(ValueError, match=r"`lengths` must have shape \(1,\), one length per row of `x` \(1, 2, 4, 3\)"):
        reverse_padded(torch.zeros(1, 2, 4, 3), torch.tensor([4, 2]))


def test_elmo_layers_run_no_finite_check(monkeypatch):
    import course_llm.elmo as elmo_mod
    seen = []
    real = elmo_mod.check_tensor
    monkeypatch.setattr(elmo_mod, "check_tensor", lambda *a, **kw: (
        seen.append(a[0]) if kw.get("finite") else None) or real(*a, **kw))
    x, lengths = torch.tensor([[1, 2, 3, 4], [5, 6, 0, 0]]), torch.tensor([4, 2])
    layers = _E.layers(x, lengths)
    assert seen == [] and len(layers) == len(_E.fwd) + 1
    # oracle: row 1's backward layer-0 half equals the embeddings (layer 0 is shared)
    assert torch.equal(layers[0][1, :2, 4:], _E.E(x)[1, :2])

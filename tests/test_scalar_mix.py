"""ScalarMix against a hand-written numpy computation."""

import numpy as np
import pytest
import torch

from ctxlib.models.scalar_mix import ScalarMix


def _np_softmax(w):
    e = np.exp(w - w.max())
    return e / e.sum()


def test_forward_matches_numpy():
    rng = np.random.default_rng(0)
    hs = [rng.normal(size=(2, 5, 4)).astype(np.float32) for _ in range(3)]
    w, gamma = np.array([0.5, -1.0, 2.0], np.float32), 1.7
    mix = ScalarMix(3, initial_scalars=w.tolist())
    with torch.no_grad():
        mix.gamma.fill_(gamma)
    ref = gamma * sum(s * h for s, h in zip(_np_softmax(w), hs))
    got = mix([torch.from_numpy(h) for h in hs]).detach().numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)
    # one stacked tensor (n_layers, ..., D) gives the same
    got2 = mix(torch.from_numpy(np.stack(hs))).detach().numpy()
    np.testing.assert_allclose(got2, ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mix.weights().detach().numpy(), _np_softmax(w), rtol=1e-6)
    assert mix.expected_layer() == pytest.approx(float((np.arange(3) * _np_softmax(w)).sum()), rel=1e-5)


def test_layer_norm_with_mask_matches_numpy():
    rng = np.random.default_rng(1)
    hs = [rng.normal(loc=j, scale=j + 1, size=(2, 6, 4)).astype(np.float32) for j in range(2)]
    mask = np.ones((2, 6), bool)
    mask[1, 4:] = False
    mix = ScalarMix(2, do_layer_norm=True, initial_scalars=[0.3, -0.2])
    ref = 0
    for s, h in zip(_np_softmax(np.array([0.3, -0.2])), hs):
        vals = h[mask]  # (n_unmasked, D)
        ref = ref + s * (h - vals.mean()) / np.sqrt(vals.var() + 1e-12)
    got = mix([torch.from_numpy(h) for h in hs], mask=torch.from_numpy(mask)).detach().numpy()
    np.testing.assert_allclose(got[mask], ref[mask], rtol=1e-4, atol=1e-5)


def test_penalty_and_gradients():
    mix = ScalarMix(3, l2=0.5, initial_scalars=[1.0, 2.0, -1.0])
    assert float(mix.penalty()) == pytest.approx(0.5 * (1 + 4 + 1))
    out = mix([torch.ones(2, 3) * j for j in range(3)]).sum() + mix.penalty()
    out.backward()
    assert mix.scalars.grad is not None and mix.gamma.grad is not None
    frozen = ScalarMix(3, trainable=False)
    assert not frozen.scalars.requires_grad
    np.testing.assert_allclose(frozen.weights().numpy(), [1 / 3] * 3, rtol=1e-6)


def test_bad_arguments():
    """Each bad argument gets a message that says what was wrong."""
    with pytest.raises(ValueError, match=r"n_layers must be >= 1, got 0"):
        ScalarMix(0)
    with pytest.raises(ValueError, match=r"initial_scalars has 1 values for 2 layers"):
        ScalarMix(2, initial_scalars=[0.0])
    with pytest.raises(ValueError, match=r"l2 must be >= 0, got -1"):
        ScalarMix(2, l2=-1)
    with pytest.raises(ValueError, match=r"got 2 layers, expected 3"):
        ScalarMix(3)([torch.zeros(2, 3)] * 2)
    with pytest.raises(ValueError, match=r"^all layers must have the same shape$"):
        ScalarMix(2)([torch.zeros(2, 3), torch.zeros(2, 4)])


def test_defaults_one_layer_and_frozen_gamma():
    """Defaults: no penalty (l2 = 0, w = 0); with l2 > 0 the penalty starts at 0 (the initial w are zeros); a single
    layer is allowed (the mix is gamma * h); trainable=False freezes gamma too."""
    assert float(ScalarMix(3).penalty()) == 0.0 and ScalarMix(3).l2 == 0.0
    assert float(ScalarMix(3, l2=0.5).penalty()) == 0.0
    h = torch.arange(6.0).reshape(2, 3)
    one = ScalarMix(1)
    torch.testing.assert_close(one([h]), h)
    torch.testing.assert_close(one(h[None]), h)
    frozen = ScalarMix(2, trainable=False)
    assert not frozen.gamma.requires_grad and ScalarMix(2).gamma.requires_grad


def test_layer_norm_without_mask_is_population_standardisation():
    """Without a mask each layer is standardised over all its values with the population variance (unbiased=False);
    a constant layer (variance 0) gives zeros, not NaN."""
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((2, 3, 4))
    mix = ScalarMix(2, do_layer_norm=True, initial_scalars=[0.0, 0.0])
    out = mix([torch.tensor(a, dtype=torch.float64), torch.tensor(b, dtype=torch.float64)]).detach().numpy()
    want = 0.5 * ((a - a.mean()) / a.std()) + 0.5 * ((b - b.mean()) / b.std())  # numpy's std: population
    np.testing.assert_allclose(out, want, rtol=1e-6)
    flat = mix([torch.full((2, 3), 5.0), torch.full((2, 3), -1.0)])
    assert torch.isfinite(flat).all() and float(flat.abs().max()) == 0.0
    masked = mix([torch.full((2, 3), 5.0), torch.full((2, 3), -1.0)], mask=torch.tensor([True, False]))
    assert torch.isfinite(masked).all()

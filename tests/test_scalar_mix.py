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
    with pytest.raises(ValueError):
        ScalarMix(0)
    with pytest.raises(ValueError):
        ScalarMix(2, initial_scalars=[0.0])
    with pytest.raises(ValueError):
        ScalarMix(2, l2=-1)
    with pytest.raises(ValueError):
        ScalarMix(3)([torch.zeros(2, 3)] * 2)
    with pytest.raises(ValueError):
        ScalarMix(2)([torch.zeros(2, 3), torch.zeros(2, 4)])

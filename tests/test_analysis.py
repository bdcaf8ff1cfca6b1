import numpy as np
import pytest

from ctxlib import analysis


def test_loo_centroid_separable_and_random():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(10, 8)) + np.array([5.0] + [0] * 7)
    b = rng.normal(size=(10, 8)) - np.array([5.0] + [0] * 7)
    X = np.concatenate([a, b])
    y = ["fruit"] * 10 + ["brand"] * 10
    assert analysis.loo_centroid_accuracy(X, y) == 1.0
    # identical vectors carry no information: leave-one-out then favours the other class
    same = np.ones((20, 8))
    assert analysis.loo_centroid_accuracy(same, y) <= 0.5


def test_loo_matches_bruteforce():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(15, 4))
    y = np.array([0, 1, 2] * 5)
    unit = X / np.linalg.norm(X, axis=1, keepdims=True)
    correct = 0
    for i in range(15):
        keep = np.arange(15) != i
        best = max(range(3), key=lambda c: float(
            (lambda m: m / np.linalg.norm(m))(unit[keep & (y == c)].mean(0)) @ unit[i]))
        correct += best == y[i]
    assert analysis.loo_centroid_accuracy(X, y) == pytest.approx(correct / 15)


def test_loo_needs_two_labels():
    with pytest.raises(ValueError):
        analysis.loo_centroid_accuracy(np.ones((3, 2)), ["a", "a", "a"])


def test_self_similarity_and_anisotropy():
    X = np.tile(np.array([[1.0, 2.0, 3.0]]), (5, 1))
    assert analysis.self_similarity(X) == pytest.approx(1.0)
    rng = np.random.default_rng(0)
    R = rng.normal(size=(500, 64))
    assert abs(analysis.anisotropy(R)) < 0.05
    assert analysis.anisotropy(R + 10.0) > 0.9


def test_layer_sense_accuracy_shape():
    rng = np.random.default_rng(0)
    V = rng.normal(size=(8, 3, 5))
    V[:4, 2] += 10
    V[4:, 2] -= 10
    acc = analysis.layer_sense_accuracy(V, [0] * 4 + [1] * 4)
    assert len(acc) == 3 and acc[2] == 1.0


def _angles(deg):
    r = np.radians(deg)
    return np.stack([np.cos(r), np.sin(r)], 1)


def _loo_reference(X, y, normalise_centroid):
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    correct = 0
    for i in range(len(X)):
        keep = np.arange(len(X)) != i

        def score(c):
            m = U[keep & (y == c)].mean(0)
            return (m / np.linalg.norm(m) if normalise_centroid else m) @ U[i]

        correct += max(sorted(set(y.tolist())), key=score) == y[i]
    return correct / len(X)


def test_loo_uses_cosine_to_the_normalised_centroid():
    """A spread-out class has a short mean vector: with a dot product its points go to the tight class next to
    them, with the cosine to the (normalised) centroid they stay in their own. Input lengths do not matter."""
    X = np.concatenate([_angles([0, 80, -80, 0, 80, -80]), _angles([35, 40, 45])])
    X = X * np.array([1.0, 3.0, 0.5, 2.0, 0.3, 4.0, 1.5, 0.2, 5.0])[:, None]  # lengths vary; the direction counts
    y = np.array(["spread"] * 6 + ["tight"] * 3)
    cos, dot = _loo_reference(X, y, True), _loo_reference(X, y, False)
    assert cos == pytest.approx(7 / 9) and dot == pytest.approx(5 / 9)  # the points tell the two apart
    assert analysis.loo_centroid_accuracy(X, y) == pytest.approx(cos)

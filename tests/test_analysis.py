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
        best = max(
            range(3), key=lambda c: float((lambda m: m / np.linalg.norm(m))(unit[keep & (y == c)].mean(0)) @ unit[i])
        )
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


# -- issue #17, item 4: what the mutation run showed untested ---------------------------------------------------------


def test_loo_ties_go_to_the_majority_class_and_small_classes_count():
    """Identical vectors: every centroid ties, so a point goes to the majority class ("b", 3 of 5), whatever the names'
    order: 3/5 right. A class of two is left-one-out to one member; a lone member cannot be, and counts as an error."""
    assert analysis.loo_centroid_accuracy(np.ones((5, 3)), ["a", "b", "b", "a", "b"]) == pytest.approx(3 / 5)
    assert analysis.loo_centroid_accuracy(np.ones((5, 3)), ["z", "b", "b", "z", "b"]) == pytest.approx(3 / 5)
    X = np.array([[1.0, 0.1], [1.0, -0.1], [-1.0, 0.1], [-1.0, -0.1], [-1.0, 0.0]])
    assert analysis.loo_centroid_accuracy(X, ["a", "a", "b", "b", "b"]) == 1.0  # "a" has two members
    X = np.array(
        [[1.0, 0.1, 0], [1.0, -0.1, 0], [1.0, 0, 0.1], [0.1, 1.0, 0], [-0.1, 1.0, 0], [0, 1.0, 0.1], [-1, -1, 0]]
    )
    assert analysis.loo_centroid_accuracy(X, list("aaabbbc")) == pytest.approx(6 / 7)  # "c" alone: an error
    with pytest.raises(ValueError, match="^need at least two labels$"):
        analysis.loo_centroid_accuracy(np.ones((3, 2)), ["a", "a", "a"])


def _pair_ranking_reference(X, y):
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    wins = total = 0.0
    for a in range(len(X)):
        for b in range(len(X)):
            for c in range(len(X)):
                if b != a and y[b] == y[a] and y[c] != y[a]:
                    d = U[a] @ U[b] - U[a] @ U[c]
                    wins += 1.0 if d > 1e-9 else 0.5 if abs(d) <= 1e-9 else 0.0
                    total += 1
    return wins / total


def test_pair_ranking_counts_triples_with_ties_as_half():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(9, 4)) * rng.uniform(0.1, 5, size=(9, 1))  # lengths must not matter
    y = np.array(list("aaabbbbcc"))
    assert analysis.pair_ranking(X, y) == pytest.approx(_pair_ranking_reference(X, y))
    X[1] = X[0] * 3  # a tie-free win; then an exact tie: b and c point the same way
    X[7] = X[2] * 0.5
    assert analysis.pair_ranking(X, y) == pytest.approx(_pair_ranking_reference(X, y))
    assert analysis.pair_ranking(np.ones((4, 2)), list("aabb")) == 0.5  # all ties
    sep = np.array([[1.0, 0], [1, 0.1], [0, 1], [0.1, 1]])
    assert (
        analysis.pair_ranking(sep, list("aabb")) == 1.0 and analysis.pair_ranking(sep, list("abab")) == 0.25
    )  # 1 of 4
    assert np.isnan(analysis.pair_ranking(sep, list("aaaa")))  # no triple: no other sense
    assert np.isnan(analysis.pair_ranking(sep, list("abcd")))  # no triple: no same-sense partner
    assert analysis.pair_ranking(sep[:3], list("aab")) == 1.0  # "b" alone is skipped as an anchor


def test_self_similarity_small_and_in_low_precision():
    a, b = np.array([1.0, 0.0]), np.array([1.0, 1.0])
    assert analysis.self_similarity(np.stack([a, b])) == pytest.approx(1 / np.sqrt(2))
    assert np.isnan(analysis.self_similarity(a[None]))
    rng = np.random.default_rng(0)
    X = rng.normal(size=(6, 5)).astype(np.float16)  # computed in float64 whatever the input's type
    X64 = X.astype(np.float64)
    U = X64 / np.linalg.norm(X64, axis=1, keepdims=True)
    S = U @ U.T
    assert analysis.self_similarity(X) == pytest.approx((S.sum() - 6) / 30, abs=1e-12)


def test_anisotropy_is_the_cosine_of_different_rows_and_reproducible():
    a, b = np.array([1.0, 0.0]), np.array([1.0, 1.0])
    assert analysis.anisotropy(np.stack([a, b])) == pytest.approx(1 / np.sqrt(2))  # every pair is (a, b) or (b, a)
    R = np.random.default_rng(0).normal(size=(50, 8)).astype(np.float16)
    assert analysis.anisotropy(R) == analysis.anisotropy(R) == analysis.anisotropy(R, 2000, 0)
    assert analysis.anisotropy(R, seed=1) != analysis.anisotropy(R)
    R64 = R.astype(np.float64)
    U = R64 / np.linalg.norm(R64, axis=1, keepdims=True)
    rng = np.random.default_rng(0)
    i, j = rng.integers(0, 50, 2000), rng.integers(0, 50, 2000)
    k = i != j
    assert analysis.anisotropy(R) == pytest.approx(float(np.mean(np.sum(U[i[k]] * U[j[k]], 1))), abs=1e-12)


def test_expected_layer():
    assert analysis.expected_layer([0.2, 0.3, 0.5]) == pytest.approx(1.3)
    assert analysis.expected_layer([1, 1]) == pytest.approx(0.5)  # normalised to sum 1
    assert analysis.expected_layer([0, 0, 1]) == 2.0 and analysis.expected_layer([1, 0, 0]) == 0.0
    assert analysis.expected_layer([0.0, 0.0]) == 0.0


def test_probe_accuracy_learns_and_its_regularisation_is_used():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(2, 0.5, 30), rng.normal(-2, 0.5, 10)])
    X = np.stack([x, rng.normal(size=40) * 100], 1)  # a noisy feature on another scale: standardised away
    y = np.array([1] * 30 + [0] * 10)
    Xt = np.array([[2.0, 50], [2.5, -80], [-2.0, 30], [-1.5, -10]])
    yt = [1, 1, 0, 0]
    assert analysis.probe_accuracy(X, y, Xt, yt) == 1.0
    assert analysis.probe_accuracy(X, y, Xt, [0, 0, 1, 1]) == 0.0
    assert analysis.probe_accuracy(X, y, Xt, yt, C=1e-6) == 0.5  # almost no weight: the majority class everywhere


def test_pair_ranking_edge_cases():
    sep = np.array([[0, 1.0], [1.0, 0], [1, 0.1]])
    assert analysis.pair_ranking(sep, list("baa")) == 1.0  # a lone label first: skipped, the others still count
    a = np.array([0.3, 0.7, 0.2], dtype=np.float32)
    X = np.stack([a, a * 3.3, a * 0.37, a * 7.1, np.array([1, 0, 0], np.float32)]).astype(np.float32)
    assert analysis.pair_ranking(X, list("aabab")) == pytest.approx(
        _pair_ranking_reference(X.astype(np.float64), np.array(list("aabab")))
    )  # exact ties, even from float32


def test_probe_standardises_features():
    """A feature a thousand times too small: unscaled, the regularised weights cannot reach it; standardised they do."""
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.normal(1, 0.2, 30), rng.normal(-1, 0.2, 30)]) * 1e-4
    X, y = x[:, None], np.array([1] * 30 + [0] * 30)
    assert analysis.probe_accuracy(X, y, np.array([[1e-4], [-1e-4]]), [1, 0]) == 1.0

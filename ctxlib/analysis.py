"""Measures on token vectors: sense separation, self-similarity, anisotropy, layer probes.

- `loo_centroid_accuracy`: leave-one-out nearest-centroid accuracy (cosine) of
  labelled token vectors; how well a layer separates senses or roles.
- `pair_ranking`: the share of triples (a, b same sense, c other sense) with cos(a, b) > cos(a, c).
- `self_similarity` / `anisotropy`: Ethayarajh (2019): mean cosine between a
  word's token vectors, and between random tokens' vectors (the baseline).
- `probe_accuracy`: a logistic-regression probe on one layer's features.
"""

from __future__ import annotations

import numpy as np

from .vecmath import EPS, unit_rows


def loo_centroid_accuracy(vectors: np.ndarray, labels) -> float:
    """Leave-one-out nearest-centroid accuracy with cosine similarity.

    vectors: (n, dim); labels: n hashables with at least 2 classes. Each vector is
    classified by the closest class centroid computed without it. A class with a
    single member cannot be left out and is then scored as an error.
    """
    X = unit_rows(np.asarray(vectors, dtype=np.float64))
    y = np.asarray(labels)
    classes = sorted(set(y.tolist()))
    if len(classes) < 2:
        raise ValueError("need at least two labels")
    sums = {c: X[y == c].sum(0) for c in classes}
    counts = {c: int((y == c).sum()) for c in classes}
    correct = 0
    for i in range(len(X)):
        best, best_s = None, -np.inf
        for c in sorted(classes, key=lambda c: -counts[c]):  # ties (identical vectors) go to the majority class
            s, n = sums[c], counts[c]
            if c == y[i]:
                s, n = s - X[i], n - 1
            if n == 0:
                continue
            sim = float(unit_rows(s / n) @ X[i])
            if sim > best_s + 1e-6:  # not decided by float32 rounding noise
                best, best_s = c, sim
        correct += int(best == y[i])
    return correct / len(X)


def pair_ranking(vectors: np.ndarray, labels) -> float:
    """Share of triples (a, b, c), b != a with label(b) == label(a) != label(c), where cos(a, b) > cos(a, c)
    (ties count half). vectors: (n, dim)."""
    X = unit_rows(np.asarray(vectors, dtype=np.float64))
    y = np.asarray(labels)
    S = X @ X.T
    wins = total = 0.0
    for a in range(len(X)):
        same = y == y[a]
        same[a] = False
        other = y != y[a]
        if not same.any() or not other.any():
            continue
        d = S[a, same][:, None] - S[a, other][None, :]  # (n_same, n_other)
        wins += float((d > 1e-9).sum()) + 0.5 * float((np.abs(d) <= 1e-9).sum())
        total += d.size
    return wins / total if total else float("nan")


def layer_sense_accuracy(vecs: np.ndarray, labels) -> list[float]:
    """loo_centroid_accuracy for each layer of (n, n_layers, dim)."""
    return [loo_centroid_accuracy(vecs[:, j, :], labels) for j in range(vecs.shape[1])]


def self_similarity(vectors: np.ndarray) -> float:
    """Mean pairwise cosine of a word's token vectors (n, dim), n >= 2."""
    X = unit_rows(np.asarray(vectors, dtype=np.float64))
    n = len(X)
    if n < 2:
        return float("nan")
    S = X @ X.T
    return float((S.sum() - np.trace(S)) / (n * (n - 1)))


def anisotropy(vectors: np.ndarray, pairs: int = 2000, seed: int = 0) -> float:
    """Mean cosine between random pairs of token vectors of different words (the baseline)."""
    X = unit_rows(np.asarray(vectors, dtype=np.float64))
    rng = np.random.default_rng(seed)
    i = rng.integers(0, len(X), pairs)
    j = rng.integers(0, len(X), pairs)
    keep = i != j
    return float(np.mean(np.sum(X[i[keep]] * X[j[keep]], axis=1)))


def probe_accuracy(train_x, train_y, test_x, test_y, C: float = 1.0, max_iter: int = 300) -> float:
    """Accuracy of a multinomial logistic-regression probe (standardised features)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    clf = make_pipeline(StandardScaler(), LogisticRegression(C=C, max_iter=max_iter))
    clf.fit(train_x, train_y)
    return float((clf.predict(test_x) == np.asarray(test_y)).mean())


def expected_layer(weights) -> float:
    """sum_j j * s_j of mixing weights s (normalised to sum 1): where a ScalarMix sits, from 0 (the token layer)
    to n_layers - 1 (the top layer)."""
    w = np.asarray(weights, dtype=np.float64)
    return float((np.arange(len(w)) * w).sum() / max(w.sum(), EPS))

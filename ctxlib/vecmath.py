"""Unit vectors and cosines, once for the whole library (numpy only).

cos(a, b) = a·b / (max(|a|, EPS) · max(|b|, EPS)), clipped to [-1, 1]: the same guard everywhere, so a zero vector
has cosine 0 with everything (where 0/0 would be nan) and every site agrees with every other on what "cosine" is.

`unit_rows` and `cosine` keep their input's dtype (float32 in, float32 out) and `cosine_matrix` works in float64, as
the code they replaced did, so figures computed before this module existed come out the same.
"""

from __future__ import annotations

import numpy as np

EPS = 1e-12  # the zero guard: a norm (or any divisor) below it is taken as EPS, so 0 / 0 gives 0, never nan


def norms(X) -> np.ndarray:
    """The Euclidean norm of each vector along the last axis: (..., D) -> (...)."""
    return np.linalg.norm(np.asarray(X), axis=-1)


def unit_rows(X) -> np.ndarray:
    """X (..., D) with every vector along the last axis scaled to length 1; zero vectors stay zero."""
    X = np.asarray(X)
    # one vector: numpy's whole-array norm (sqrt of a dot), as `cosine` and the code this replaced use; it can differ
    # from the per-row reduction in the last bit
    n = np.linalg.norm(X) if X.ndim == 1 else np.linalg.norm(X, axis=-1, keepdims=True)
    return X / np.maximum(n, EPS)


def cosine(a, b) -> float:
    """The cosine of two vectors (D,), in [-1, 1]; 0.0 when either is zero."""
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    return float(np.clip(np.dot(a, b) / (max(na, EPS) * max(nb, EPS)), -1.0, 1.0))


def cosine_matrix(X, Y=None) -> np.ndarray:
    """(n, m) cosines between the rows of X (n, D) and of Y (m, D) (Y=None: X itself, a symmetric (n, n)), in float64,
    clipped to [-1, 1]; a zero row gives 0 against everything."""
    U = unit_rows(np.asarray(X, dtype=np.float64))
    V = U if Y is None else unit_rows(np.asarray(Y, dtype=np.float64))
    return np.clip(U @ V.T, -1.0, 1.0)

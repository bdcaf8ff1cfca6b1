"""ctxlib.vecmath: unit rows, cosine and the cosine matrix against plain numpy references; and that no other module
normalises vectors with its own zero guard (one place for it, house issue item 5)."""

import re
from pathlib import Path

import numpy as np
import pytest

import ctxlib
from ctxlib import vecmath
from ctxlib.vecmath import EPS, cosine, cosine_matrix, norms, unit_rows

ROOT = Path(__file__).resolve().parents[1] / "ctxlib"


def _ref_cos(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    na, nb = np.sqrt((a * a).sum()), np.sqrt((b * b).sum())
    return 0.0 if na == 0 or nb == 0 else float((a * b).sum() / (na * nb))


def test_unit_rows_have_length_one_and_zero_rows_stay_zero():
    X = np.array([[3.0, 4.0], [0.0, 0.0], [-2.0, 0.0]])
    U = unit_rows(X)
    np.testing.assert_allclose(U, [[0.6, 0.8], [0.0, 0.0], [-1.0, 0.0]])
    assert not np.isnan(U).any()
    R = np.random.default_rng(0).normal(size=(4, 5, 7)).astype(np.float32)  # any leading axes
    U3 = unit_rows(R)
    assert U3.dtype == np.float32 and U3.shape == R.shape
    np.testing.assert_allclose(np.sqrt((U3.astype(np.float64) ** 2).sum(-1)), 1.0, atol=1e-6)
    np.testing.assert_allclose(unit_rows(np.array([0.0, 2.0])), [0.0, 1.0])  # one vector
    np.testing.assert_array_equal(unit_rows(np.zeros(3)), np.zeros(3))
    np.testing.assert_allclose(norms(X), [5.0, 0.0, 2.0])


def test_cosine_zero_vectors_and_known_values():
    assert cosine(np.array([1.0, 0]), np.array([0.0, 0])) == 0.0
    assert cosine(np.zeros(4), np.zeros(4)) == 0.0
    assert cosine(np.array([3.0, 4]), np.array([4.0, 3])) == pytest.approx(24 / 25)
    assert cosine(np.array([1.0, 1]), np.array([-2.0, -2])) == pytest.approx(-1)
    assert isinstance(cosine(np.ones(2, np.float32), np.ones(2, np.float32)), float)
    assert ctxlib.cosine is vecmath.cosine  # the public name is this one


def test_cosine_agrees_with_a_reference_and_stays_in_range():
    rng = np.random.default_rng(3)
    for dt in (np.float32, np.float64):
        X = rng.normal(size=(30, 24)).astype(dt)
        for i in range(10):
            for j in range(10):
                c = cosine(X[i], X[j])
                assert -1.0 <= c <= 1.0
                assert c == pytest.approx(_ref_cos(X[i], X[j]), abs=1e-6 if dt is np.float32 else 1e-12)
    v = rng.normal(size=50).astype(np.float32)
    assert cosine(v, v) == pytest.approx(1.0, abs=1e-6) and cosine(v, v) <= 1.0


def test_cosine_matrix_symmetric_reference_and_rectangular():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(9, 6))
    X[2] = 0
    C = cosine_matrix(X)
    assert C.shape == (9, 9) and C.dtype == np.float64
    np.testing.assert_array_equal(C, C.T)
    ref = np.array([[_ref_cos(a, b) for b in X] for a in X])
    np.testing.assert_allclose(C, ref, atol=1e-12)
    assert (C[2] == 0).all() and (C[:, 2] == 0).all()
    assert np.abs(C).max() <= 1.0
    np.testing.assert_allclose(np.diag(C)[[0, 1, 3]], 1.0)
    Y = rng.normal(size=(4, 6)).astype(np.float32)
    R = cosine_matrix(X, Y)
    assert R.shape == (9, 4)
    np.testing.assert_allclose(R, [[_ref_cos(a, b) for b in Y] for a in X], atol=1e-6)
    np.testing.assert_allclose(R[5, 1], cosine(X[5], Y[1].astype(np.float64)), atol=1e-12)


def test_eps_is_a_guard_only_for_near_zero_vectors():
    tiny = np.array([1e-13, 0.0])
    assert np.linalg.norm(unit_rows(tiny)) < 1  # below EPS: scaled by 1/EPS, not to unit length
    assert EPS == 1e-12


# lines that normalise a vector with their own guard: a 1e-12 (any spelling), or a division by a norm
_OWN_GUARD = re.compile(r"\b1(\.0*)?[eE]-0*12\b|/\s*(np\.)?max(imum)?\(\s*(float\()?\s*np\.linalg\.norm")


def own_guards(files) -> list[str]:
    return [
        f"{p.relative_to(ROOT)}:{i}: {line.strip()}"
        for p in files
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if _OWN_GUARD.search(line)
    ]


def test_no_module_but_vecmath_has_its_own_normalisation_guard():
    files = [p for p in sorted(ROOT.rglob("*.py")) if p.name != "vecmath.py"]
    assert len(files) > 50
    assert own_guards(files) == []


def test_the_guard_check_finds_what_it_should(tmp_path):
    global ROOT
    old, ROOT = ROOT, tmp_path
    try:
        f = tmp_path / "m.py"
        f.write_text(
            "u = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)\n"
            "w = v / max(float(np.linalg.norm(v)), EPS)\n"
            "x = a / (b + 1.0E-12)\n"
            "y = unit_rows(v)  # fine\n"
        )
        assert [s.split(":")[1] for s in own_guards([f])] == ["1", "2", "3"]
    finally:
        ROOT = old

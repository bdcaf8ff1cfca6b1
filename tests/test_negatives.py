"""word2vec's windows (ctxlib.training.word2vec_sgd._windows) on short stretches of kept positions, where some reduced
window sizes are drawn by no position at all: the sizes that do occur must still come out (issue #17, item 4: a
`break` in place of the `continue` that skips an empty size survived test_w2v_sampling's longer stretches)."""

import numpy as np

from ctxlib.training.word2vec_sgd import _windows


def _reference(ids, sid, lo, hi, window, seed):
    eff = window - np.random.default_rng(seed).integers(0, window, hi - lo)
    return {
        p: sorted(int(ids[j]) for j in range(p - e, p + e + 1) if j != p and 0 <= j < len(ids) and sid[j] == sid[p])
        for p, e in zip(range(lo, hi), eff)
    }


def test_windows_of_short_stretches_yield_every_kept_position_whatever_sizes_are_drawn():
    n, window = 30, 5
    ids = np.arange(n) + 100
    sid = np.repeat([0, 1, 2], [12, 3, 15])
    gaps = 0
    for seed in range(40):
        lo = seed % 20
        hi = lo + 1 + seed % 4  # 1 to 4 positions: most of the 5 sizes are not drawn
        got = {}
        for center, ctx, valid in _windows(ids, sid, lo, hi, window, np.random.default_rng(seed)):
            for c, row, ok in zip(center, ctx, valid):
                got[int(c) - 100] = sorted(int(x) for x, v in zip(row, ok) if v)
        assert got == _reference(ids, sid, lo, hi, window, seed), (lo, hi, seed)
        eff = window - np.random.default_rng(seed).integers(0, window, hi - lo)
        gaps += any(e not in eff and e < eff.max() for e in range(1, window))
    assert gaps > 10  # the case that matters (a size missing below a drawn one) was met often


def test_keep_probabilities_are_float64_whatever_the_counts_type():
    from ctxlib.training.word2vec_sgd import keep_probabilities

    for sample in (0, 1e-3):
        for counts in ([3, 5, 7], np.array([3, 5, 7], np.int32), np.array([3, 5, 7], np.float32)):
            got = keep_probabilities(counts, sample)
            assert got.dtype == np.float64 and got.shape == (3,) and ((got > 0) & (got <= 1)).all()
    ref = np.minimum(1.0, (np.sqrt(np.array([3.0, 5, 7]) / 0.015) + 1) * 0.015 / np.array([3.0, 5, 7]))
    np.testing.assert_array_equal(keep_probabilities(np.array([3, 5, 7], np.float32), 1e-3), ref)  # in float64

"""word2vec's sampling ingredients, exactly: the negative-sampling table's entries, subsampling's shape, and the
(center, context) windows with gensim's reduced window. (test_word2vec.py checks the distributions and training.)"""

import numpy as np

from ctxlib.training.word2vec_sgd import _windows, keep_probabilities, negative_table


def test_negative_table_entries_are_exact():
    counts = np.array([16, 1, 81, 0, 256])
    table = negative_table(counts, size=1000)  # exponent 0.75 by default: shares 8, 1, 27, 0, 64 of 100
    assert len(table) == 1000 and table.dtype == np.int64
    assert np.bincount(table, minlength=5).tolist() == [80, 10, 270, 0, 640]
    assert (np.diff(table) >= 0).all()  # word i fills one block
    assert np.bincount(negative_table(counts, 1.0, size=354), minlength=5).tolist() == [16, 1, 81, 0, 256]


def test_keep_probabilities_off_is_all_ones():
    got = keep_probabilities([3, 5, 7], 0)
    assert got.shape == (3,) and got.tolist() == [1.0, 1.0, 1.0]


def _reference_windows(ids, sid, lo, hi, window, seed):
    rng = np.random.default_rng(seed)
    eff = window - rng.integers(0, window, hi - lo)
    out = {}
    for p, e in zip(range(lo, hi), eff):
        out[p] = sorted(
            int(ids[j]) for j in range(p - e, p + e + 1) if j != p and 0 <= j < len(ids) and sid[j] == sid[p]
        )
    return out


def test_windows_match_gensims_reduced_window():
    """Every kept position lo..hi-1 appears once, as the center of a window of e = window - U{0..window-1} words each
    side, cut at the sentence's ends; the valid contexts are exactly those words (ids here are positions)."""
    n, window = 40, 4
    ids = np.arange(n) * 10 + 7
    sid = np.repeat([0, 1, 2, 3], [9, 1, 20, 10])  # a one-word sentence too
    for lo, hi, seed in ((0, n, 0), (5, 33, 1), (12, 13, 2)):
        got, sizes = {}, set()
        for center, ctx, valid in _windows(ids, sid, lo, hi, window, np.random.default_rng(seed)):
            assert ctx.shape == (len(center), ctx.shape[1]) and ctx.shape[1] % 2 == 0 and ctx.shape[1] > 0
            sizes.add(ctx.shape[1])
            for c, row, ok in zip(center, ctx, valid):
                p = (int(c) - 7) // 10
                assert p not in got
                got[p] = sorted(int(x) for x, v in zip(row, ok) if v)
        assert got == _reference_windows(ids, sid, lo, hi, window, seed)
        if hi - lo > 20:
            assert sizes == {2, 4, 6, 8}  # every reduced window 1..4 occurs

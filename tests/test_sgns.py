"""word2vec's hand-written updates (ctxlib.training.sgns) against plain numpy loops over word2vec.c's per-example
updates: CBOW windows, gensim's exact skip-gram pairs, the returned loss, the row caps and the initialisation.
(The skip-gram window step has its own loop in test_word2vec.py.)"""

import numpy as np
import pytest
import torch

from ctxlib.models.word2vec import Word2VecConfig
from ctxlib.training.sgns import SGNS


def _sig(x):
    return 1 / (1 + np.exp(-x))


def _logsig(x):
    return -np.log1p(np.exp(-x))


def _model(cap=0, sg=False, V=6, seed=1):
    m = SGNS(V, Word2VecConfig(dim=4, negative=2, max_row_updates=cap, sg=sg), torch.device("cpu"))
    m.w_out.normal_(0, 0.5, generator=torch.Generator().manual_seed(seed))
    m.w_in.normal_(0, 0.5, generator=torch.Generator().manual_seed(seed + 1))
    return m


def test_init_follows_gensim_and_the_seed():
    cfg = Word2VecConfig(dim=8, negative=3, seed=5)
    a, b = SGNS(50, cfg, torch.device("cpu")), SGNS(50, cfg, torch.device("cpu"))
    assert torch.equal(a.w_in, b.w_in) and not torch.equal(a.w_in, SGNS(50, Word2VecConfig(dim=8, seed=6), "cpu").w_in)
    assert float(a.w_in.abs().max()) <= 0.5 / 8 and float(a.w_in.abs().max()) > 0.4 / 8  # uniform in +-0.5/dim
    assert float(a.w_in.min()) < 0 < float(a.w_in.max()) and abs(float(a.w_in.mean())) < 0.01
    assert a.w_in.device.type == a.w_out.device.type == a.label.device.type == "cpu"
    assert not a.w_out.any() and a.w_out.shape == (50, 8)
    assert a.label.tolist() == [1.0, 0.0, 0.0, 0.0]


@pytest.mark.parametrize("cap", [0, 2])
def test_cbow_step_matches_a_numpy_loop(cap):
    """CBOW: the mean of the valid context vectors predicts the center and the negatives (a negative equal to the
    center is skipped); every valid context row gets the summed error; a window without valid context changes
    nothing. The returned loss is -sum log sigmoid(+-f) over the kept targets, with the old vectors."""
    m = _model(cap)
    w_in, w_out = m.w_in.numpy().copy(), m.w_out.numpy().copy()
    center = np.array([0, 1, 2, 3])
    ctx = np.array([[1, 2, 3], [0, 2, 2], [4, 5, 1], [1, 1, 1]])
    valid = np.array([[True, True, False], [True, False, False], [False, False, False], [True, True, True]])
    neg = np.array([[4, 0], [5, 4], [1, 3], [4, 4]])
    lr = 0.1
    d_in, d_out = np.zeros_like(w_in), np.zeros_like(w_out)
    n_in, n_out = np.zeros(6), np.zeros(6)
    loss = 0.0
    for b in range(4):
        cs = [ctx[b, j] for j in range(3) if valid[b, j]]
        if not cs:
            continue
        h = np.mean([w_in[c] for c in cs], 0)
        err = np.zeros(4)
        for k, t in enumerate([center[b]] + list(neg[b])):
            n_out[t] += 1
            if k > 0 and t == center[b]:
                continue
            f = h @ w_out[t]
            g = ((k == 0) - _sig(f)) * lr
            loss -= _logsig(f if k == 0 else -f)
            err += g * w_out[t]
            d_out[t] += g * h
        for c in cs:
            n_in[c] += 1
            d_in[c] += err
    if cap:
        d_in *= np.minimum(1, cap / np.maximum(n_in, 1))[:, None]
        d_out *= np.minimum(1, cap / np.maximum(n_out, 1))[:, None]
        assert n_in.max() > cap and n_out.max() > cap  # the caps do bite
    got = m.step_windows(*(torch.from_numpy(x) for x in (center, ctx, valid, neg)), lr)
    assert got == pytest.approx(loss, rel=1e-5)
    np.testing.assert_allclose(m.w_in.numpy(), w_in + d_in, atol=1e-6)
    np.testing.assert_allclose(m.w_out.numpy(), w_out + d_out, atol=1e-6)


def test_skipgram_window_loss_and_no_loss():
    m = _model(sg=True)
    w_in, w_out = m.w_in.numpy().copy(), m.w_out.numpy().copy()
    center, ctx, valid, neg = np.array([0]), np.array([[1, 2]]), np.array([[True, False]]), np.array([[3, 0]])
    want = -_logsig(w_in[1] @ w_out[0]) - _logsig(-(w_in[1] @ w_out[3]))  # neg 0 is the center: skipped
    args = [torch.from_numpy(x) for x in (center, ctx, valid, neg)]
    assert m.step_windows(*args, 0.1) == pytest.approx(want, rel=1e-5)
    assert _model(sg=True).step_windows(*args, 0.1, with_loss=False) == 0.0
    cb = _model(sg=False)
    assert cb.step_windows(*args, 0.1, False) == 0.0


@pytest.mark.parametrize("cap", [0, 1])
def test_exact_skipgram_pairs_match_a_numpy_loop(cap):
    """gensim's exact sampling: each (context, center) pair with its own K negatives."""
    m = _model(cap, sg=True)
    w_in, w_out = m.w_in.numpy().copy(), m.w_out.numpy().copy()
    center, ctx = np.array([0, 0, 1]), np.array([1, 2, 1])
    neg = np.array([[3, 0], [4, 5], [1, 3]])  # pair 1's second negative is its center: skipped; pair 3's first
    lr = 0.2
    d_in, d_out = np.zeros_like(w_in), np.zeros_like(w_out)
    n_in, n_out = np.zeros(6), np.zeros(6)
    loss = 0.0
    for p in range(3):
        n_in[ctx[p]] += 1
        for k, t in enumerate([center[p]] + list(neg[p])):
            n_out[t] += 1
            if k > 0 and t == center[p]:
                continue
            f = w_in[ctx[p]] @ w_out[t]
            g = ((k == 0) - _sig(f)) * lr
            loss -= _logsig(f if k == 0 else -f)
            d_in[ctx[p]] += g * w_out[t]
            d_out[t] += g * w_in[ctx[p]]
    if cap:
        d_in *= np.minimum(1, cap / np.maximum(n_in, 1))[:, None]
        d_out *= np.minimum(1, cap / np.maximum(n_out, 1))[:, None]
    got = m.step_pairs(*(torch.from_numpy(x) for x in (center, ctx, neg)), lr)
    assert got == pytest.approx(loss, rel=1e-5)
    np.testing.assert_allclose(m.w_in.numpy(), w_in + d_in, atol=1e-6)
    np.testing.assert_allclose(m.w_out.numpy(), w_out + d_out, atol=1e-6)


def test_row_caps_count_output_and_input_rows_apart():
    """_cap_rows: n counts a row's contributions as an output row (at tgt) and as an input row (at ctx) separately;
    rows within the cap keep their update, rows over it are scaled by cap / n; nothing changes at or under the cap."""
    m = _model(cap=2, V=4)
    d_out, d_in = torch.ones(1, 3, 2), torch.ones(1, 2, 2)
    tgt, ctx = torch.tensor([[0, 1, 1]]), torch.tensor([[1, 3]])
    o, i = m._cap_rows(d_out, tgt, torch.ones(1, 3), d_in, ctx, torch.ones(1, 2))
    assert torch.equal(o, d_out) and torch.equal(i, d_in)  # output row 1 twice = the cap; input rows once each
    o, i = m._cap_rows(d_out, tgt, torch.full((1, 3), 2.0), d_in, ctx, torch.full((1, 2), 3.0))
    # output row 0: 2 (kept), output row 1: 4 (x 1/2); input rows 1 and 3: 3 each (x 2/3)
    np.testing.assert_allclose(o[0, :, 0].numpy(), [1.0, 0.5, 0.5])
    np.testing.assert_allclose(i[0, :, 0].numpy(), [2 / 3, 2 / 3])
    o, i = m._cap_rows(d_out, torch.tensor([[3, 3, 3]]), torch.ones(1, 3), d_in, ctx, torch.zeros(1, 2))
    np.testing.assert_allclose(o[0, :, 0].numpy(), [2 / 3] * 3)  # input row 3 unused: it does not count at tgt
    np.testing.assert_allclose(i.numpy(), d_in.numpy())

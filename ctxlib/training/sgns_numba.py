"""word2vec's CPU kernel: skip-gram and CBOW with negative sampling, compiled with numba, driven by
ctxlib.training.word2vec (the torch updates in ctxlib.training.sgns stay for CUDA).

`_train_chunk` trains on the kept (subsampled) positions lo..hi of one epoch, one center word after the
other, as word2vec.c and gensim's Cython loop do: it draws the center's window (b in [0, window), so
window - b words on each side, within its sentence), then for skip-gram each context word's input vector
predicts the center word against `negative` negatives (gensim's direction), for CBOW the mean of the
context input vectors does and each context word receives the whole error (cbow_mean=1). Each update is
applied at once (plain sequential SGD), so the batched path's row cap (`max_row_updates`) and batch size
have no part here. The documented departure stays: with `shared_negatives` (the default) skip-gram draws
one set of negatives per window and reuses it for the window's context words; `shared_negatives=False`
draws fresh ones per (context, center) pair, as gensim does. Negatives equal to the center are skipped.

Random numbers come from word2vec.c's linear congruential generator (next = next * 25214903917 + 11),
its state passed in and written back, so one worker with one seed gives bit-identical vectors. The kernel
releases the GIL (nogil): `workers` Python threads run it at once on different chunks and update the two
shared tables without locks (Hogwild), like gensim's worker threads.

Sigmoid: gensim's table (1,000 entries over [-6, 6]; an update whose |f| >= 6 is skipped, as in gensim)
when `exp_table` is given, which fit() does by default, else the exact 1 / (1 + exp(-f)) of the torch path.
Measured with bench/word2vec_vs_gensim.py (full corpus, skip-gram, 5 epochs, one run, load 15-23 on 2 cores):
the same quality (POS agreement@10 0.3624 vs 0.3624 with 1 worker, 0.3625 vs 0.3635 with 2; gensim 0.3623,
0.3638; the same epoch losses to 3 decimals) and 1.35x (1 worker) / 1.11x (2 workers) more pairs per CPU
second with the table: the exp is gone, and late in training many negatives are saturated, so their
updates are skipped. Hence the table by default.

Compiled code is cached on disk (numba's cache=True: next to this file in __pycache__, or in numba's
user-wide cache dir / NUMBA_CACHE_DIR when that is not writable; never inside checkpoints/), so only the
first process on a machine compiles (a few seconds); later ones load the machine code.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

MAX_EXP = 6.0  # gensim's sigmoid table: EXP_TABLE_SIZE entries over [-MAX_EXP, MAX_EXP]
EXP_TABLE_SIZE = 1000
_MULT, _ADD = np.uint64(25214903917), np.uint64(11)  # word2vec.c's random number generator


def sigmoid_table() -> np.ndarray:
    """gensim's EXP_TABLE: sigmoid at EXP_TABLE_SIZE points evenly spaced over [-MAX_EXP, MAX_EXP)."""
    x = (np.arange(EXP_TABLE_SIZE) / EXP_TABLE_SIZE * 2 - 1) * MAX_EXP
    return (1.0 / (1.0 + np.exp(-x))).astype(np.float32)


def _cache_outside_checkpoints() -> None:
    """Never let numba write its cache inside checkpoints/ (NUMBA_CACHE_DIR pointing there is ignored)."""
    import numba

    from ..checkpoint import CHECKPOINT_DIR

    d = getattr(numba.config, "CACHE_DIR", "")
    if d and Path(d).resolve().is_relative_to(Path(CHECKPOINT_DIR).resolve()):
        log.warning("NUMBA_CACHE_DIR=%s is inside checkpoints/; using numba's default cache location", d)
        numba.config.CACHE_DIR = ""


def _njit(fn, **kw):
    """numba.njit(nogil, fastmath, cache, **kw); without caching where no cache location is writable."""
    import numba

    try:
        return numba.njit(nogil=True, fastmath=True, cache=True, **kw)(fn)
    except RuntimeError as e:  # numba: "cannot cache function ...: no locator available"
        log.warning("numba cannot cache the word2vec kernel (%s); it will compile in every process", e)
        return numba.njit(nogil=True, fastmath=True, cache=False, **kw)(fn)


def _example(h, row, w_out, neu1e, center, negs, negative, use_table, exp_table, scale, lr, with_loss, loss):
    """One example of negative sampling, the update skip-gram and CBOW share: the input vector h[row] (D,) predicts
    `center` against `negs` (a negative equal to the center is skipped). w_out's rows are updated at once; h's
    error is added to neu1e, for the caller to apply to the input vectors. Returns `loss` plus the example's loss
    when with_loss."""
    dim = h.shape[1]
    for k in range(negative + 1):
        if k == 0:
            t = center
            label = 1.0
        else:
            t = negs[k - 1]
            if t == center:
                continue
            label = 0.0
        f = np.float32(0.0)
        for d in range(dim):
            f += h[row, d] * w_out[t, d]
        if use_table:
            if f <= -MAX_EXP or f >= MAX_EXP:
                continue
            sig = exp_table[int((f + MAX_EXP) * scale)]
        else:
            sig = 1.0 / (1.0 + math.exp(-f))
        g = np.float32((label - sig) * lr)
        for d in range(dim):
            neu1e[d] += g * w_out[t, d]
            w_out[t, d] += g * h[row, d]
        if with_loss:
            x = -f if label > 0 else f  # -log sigmoid(+-f) = softplus(x), computed stably
            loss += max(x, 0.0) + math.log1p(math.exp(-abs(x)))
    return loss


def _train_chunk(
    w_in,
    w_out,
    ids,
    sid,
    lo,
    hi,
    window,
    negative,
    sg,
    shared,
    table,
    lr,
    use_table,
    exp_table,
    rng,
    loss_every,
    work,
    negs,
):
    """Train on kept positions lo..hi. w_in/w_out (V, D) float32, updated in place; ids/sid (n,) int64 word ids and
    sentence ids of the kept words; table: the unigram^0.75 table; rng: uint64[1] generator state (updated);
    work (2, D) float32 scratch; negs (negative,) int64 scratch. The loss is summed for every `loss_every`-th
    position. Returns (loss sum, examples in the loss: (context, center) pairs for skip-gram, windows for CBOW,
    (context, center) pairs trained); the loss of an example sums over its center word and negatives."""
    n = ids.shape[0]
    dim = w_in.shape[1]
    n_table = np.uint64(table.shape[0])
    uwin = np.uint64(window)
    scale = exp_table.shape[0] / MAX_EXP / 2.0
    state = rng[0]
    neu1 = work[0]
    neu1e = work[1]
    loss = 0.0
    loss_n = 0
    pairs = 0
    for p in range(lo, hi):
        state = state * _MULT + _ADD
        e = window - np.int64(state % uwin)  # the reduced window: 1..window
        center = ids[p]
        s = sid[p]
        a = max(p - e, 0)
        b = min(p + e + 1, n)
        with_loss = p % loss_every == 0
        if sg and shared or not sg:
            for k in range(negative):
                state = state * _MULT + _ADD
                negs[k] = table[np.int64((state >> np.uint64(16)) % n_table)]
        if sg:
            for j in range(a, b):
                if j == p or sid[j] != s:
                    continue
                ctx = ids[j]
                if not shared:
                    for k in range(negative):
                        state = state * _MULT + _ADD
                        negs[k] = table[np.int64((state >> np.uint64(16)) % n_table)]
                for d in range(dim):
                    neu1e[d] = 0.0
                loss = _example(
                    w_in, ctx, w_out, neu1e, center, negs, negative, use_table, exp_table, scale, lr, with_loss, loss
                )
                for d in range(dim):
                    w_in[ctx, d] += neu1e[d]
                pairs += 1
                if with_loss:
                    loss_n += 1
        else:  # CBOW: the mean of the context input vectors predicts the center word
            cw = 0
            for d in range(dim):
                neu1[d] = 0.0
                neu1e[d] = 0.0
            for j in range(a, b):
                if j == p or sid[j] != s:
                    continue
                ctx = ids[j]
                cw += 1
                for d in range(dim):
                    neu1[d] += w_in[ctx, d]
            if cw == 0:
                continue
            inv = np.float32(1.0 / cw)
            for d in range(dim):
                neu1[d] *= inv
            loss = _example(
                work, 0, w_out, neu1e, center, negs, negative, use_table, exp_table, scale, lr, with_loss, loss
            )  # work[0] is neu1
            for j in range(a, b):
                if j == p or sid[j] != s:
                    continue
                ctx = ids[j]
                for d in range(dim):
                    w_in[ctx, d] += neu1e[d]
            pairs += cw
            if with_loss:
                loss_n += 1
    rng[0] = state
    return loss, loss_n, pairs


_kernel = None


def kernel():
    """The compiled `_train_chunk` (compiled or loaded from the disk cache on first use)."""
    global _kernel, _example
    if _kernel is None:
        _cache_outside_checkpoints()
        _example = _njit(
            _example, inline="always"
        )  # compiled first: numba resolves the kernel's call to it when compiling the kernel
        _kernel = _njit(_train_chunk)
    return _kernel


def available() -> bool:
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


def warm_up() -> None:
    """Compile the kernel (or load it from numba's disk cache) with one tiny call, the argument types of a real one."""
    from ..models.word2vec import Word2VecConfig

    w, ids = np.zeros((4, 8), np.float32), np.arange(4, dtype=np.int64)
    Worker(8, 2, 1).run(w, w.copy(), ids, ids * 0, 0, 4, Word2VecConfig(dim=8, window=2, negative=2), ids, 0.01)


class Worker:
    """One Hogwild worker's scratch space and random state; `run` trains on one chunk of kept positions."""

    def __init__(self, dim: int, negative: int, seed: int):
        self.work = np.zeros((2, dim), np.float32)
        self.negs = np.zeros(negative, np.int64)
        self.rng = np.array([seed], dtype=np.uint64)

    def run(self, w_in, w_out, ids, sid, lo, hi, cfg, table, lr: float, exp_table=None, loss_every: int = 8):
        use_table = exp_table is not None
        et = exp_table if use_table else _NO_TABLE
        return kernel()(
            w_in,
            w_out,
            ids,
            sid,
            lo,
            hi,
            cfg.window,
            cfg.negative,
            cfg.sg,
            cfg.shared_negatives,
            table,
            lr,
            use_table,
            et,
            self.rng,
            loss_every,
            self.work,
            self.negs,
        )


_NO_TABLE = np.zeros(1, np.float32)

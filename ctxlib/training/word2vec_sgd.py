"""word2vec's SGD on the corpus, chunk by chunk (used by training/word2vec.py's `fit`): gensim's subsampling keep
probability, word2vec.c's unigram^0.75 negative table, the reduced windows, one chunk's updates (the batched torch
updates of ctxlib.training.sgns, or the numba kernel of ctxlib.training.sgns_numba) and the Hogwild worker loop
with its shared counters.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

import numpy as np

from ..models.word2vec import Word2VecConfig
from . import sgns_numba
from .sgns import SGNS

TABLE_SIZE = 10_000_000  # entries in the negative-sampling table (word2vec.c uses 1e8)
LOSS_EVERY = 8  # steps between loss measurements


# -- SGNS ingredients ------------------------------------------------------------------------
def keep_probabilities(counts: np.ndarray, sample: float) -> np.ndarray:
    """gensim's subsampling: the probability of keeping each occurrence of a word with count c."""
    counts = np.asarray(counts, dtype=np.float64)
    if sample <= 0:
        return np.ones_like(counts)
    t = sample * counts.sum()
    return np.minimum(1.0, (np.sqrt(counts / t) + 1.0) * t / counts)


def negative_table(counts: np.ndarray, exponent: float = 0.75, size: int = TABLE_SIZE) -> np.ndarray:
    """word2vec.c's unigram table: word i fills a share count_i^exponent / sum of the entries."""
    p = np.asarray(counts, dtype=np.float64) ** exponent
    ends = np.round(np.cumsum(p / p.sum()) * size).astype(np.int64)  # word i fills [ends[i-1], ends[i])
    return np.repeat(np.arange(len(p), dtype=np.int64), np.diff(ends, prepend=0))


# -- a chunk of training --------------------------------------------------------------------------
def _windows(ids: np.ndarray, sid: np.ndarray, lo: int, hi: int, window: int, rng: np.random.Generator):
    """Yield (centers, contexts, valid) for kept positions lo..hi, grouped by effective window e (contexts: 2e)."""
    n = len(ids)
    pos = np.arange(lo, hi)
    eff = window - rng.integers(0, window, hi - lo)  # gensim's reduced window: 1..window
    for e in range(1, window + 1):
        p = pos[eff == e]
        if len(p) == 0:
            continue
        offs = np.concatenate([np.arange(-e, 0), np.arange(1, e + 1)])
        j = p[:, None] + offs  # (m, 2e)
        jc = j.clip(0, n - 1)
        valid = (j >= 0) & (j < n) & (sid[jc] == sid[p][:, None])
        yield ids[p], ids[jc], valid


class WorkerState:
    """Counters shared by the worker threads (Hogwild: the tables themselves are updated without locks)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.done = self.steps = self.pairs = self.loss_n = 0
        self.loss_sum = 0.0
        self.lr = 0.0
        self.stop = False


def torch_chunk(model: SGNS, ids, sid, rng, table, lo: int, hi: int, lr: float):
    """The batched torch updates on kept positions lo..hi; returns (loss sum, examples in it, SGD steps, pairs)."""
    import torch

    cfg, dev = model.cfg, model.device
    # a small vocabulary gets smaller batches: many summed updates to one row in a step would diverge
    K, B = cfg.negative, min(cfg.batch_size, max(16, len(model.w_in) // 4))
    loss_sum, loss_n, steps, pairs = 0.0, 0, 0, 0
    for center, ctx, valid in _windows(ids, sid, lo, hi, cfg.window, rng):
        if cfg.sg and not cfg.shared_negatives:  # gensim's exact sampling: K fresh negatives per pair
            ctr = np.broadcast_to(center[:, None], ctx.shape)[valid]
            cx = ctx[valid]
            nb = B * (cfg.window + 1)  # as many pairs as B windows hold on average
            for a in range(0, len(cx), nb):
                neg = table[rng.integers(0, len(table), (len(cx[a : a + nb]), K))]
                t = [torch.from_numpy(x).to(dev) for x in (ctr[a : a + nb], cx[a : a + nb], neg)]
                loss_sum += model.step_pairs(*t, lr)
                loss_n += len(t[0])
                steps += 1
            pairs += len(cx)
            continue
        neg = table[rng.integers(0, len(table), (len(center), K))]  # (m, K): K negatives per window
        arrays = [torch.from_numpy(x).to(dev) for x in (center, ctx, valid, neg)]  # sliced below without copies
        for a in range(0, len(center), B):
            t = [x[a : a + B] for x in arrays]
            with_loss = steps % LOSS_EVERY == 0  # the loss is only monitored: a sample of steps is enough
            loss_sum += model.step_windows(*t, lr, with_loss)
            if with_loss:
                loss_n += int(t[2].sum()) if cfg.sg else len(t[0])
            steps += 1
        pairs += int(valid.sum())
    return loss_sum, loss_n, steps, pairs


def numba_chunk(model: SGNS, ids, sid, nw: sgns_numba.Worker, table, exp_table, lo: int, hi: int, lr: float):
    """The numba kernel on kept positions lo..hi (one chunk = one step); returns (loss sum, examples in it, 1, pairs)."""
    w_in, w_out = model.w_in.numpy(), model.w_out.numpy()  # views: the kernel updates the tables in place
    loss_sum, loss_n, pairs = nw.run(w_in, w_out, ids, sid, lo, hi, model.cfg, table, lr, exp_table, LOSS_EVERY)
    return loss_sum, loss_n, 1, pairs


def worker(
    cfg: Word2VecConfig,
    chunks,
    state: WorkerState,
    train: Callable,
    total: int,
    raw_per_kept: float,
    deadline: float,
    report: Callable[[], None] | None,
):
    """Train on chunks (lo, hi) of kept positions taken from the shared iterator `chunks` until none is left or the
    time is up: train(lo, hi, lr) -> (loss sum, examples in it, steps, pairs) is `torch_chunk` or `numba_chunk`."""
    while not state.stop:
        with state.lock:
            lo, hi = next(chunks, (None, None))
        if lo is None:
            return
        lr = max(cfg.min_lr, cfg.lr - (cfg.lr - cfg.min_lr) * state.done / total)  # linear decay by words done
        loss_sum, loss_n, steps, pairs = train(lo, hi, lr)
        with state.lock:
            state.done += round((hi - lo) * raw_per_kept)
            state.steps, state.pairs, state.lr = state.steps + steps, state.pairs + pairs, lr
            state.loss_sum, state.loss_n = state.loss_sum + loss_sum, state.loss_n + loss_n
            if deadline and time.perf_counter() > deadline:
                state.stop = True
        if report is not None:
            report()

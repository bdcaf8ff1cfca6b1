"""word2vec: skip-gram and CBOW with negative sampling, in PyTorch without autograd.

Follows Mikolov et al. 2013, "Distributed Representations of Words and Phrases and
their Compositionality", as implemented in word2vec.c and gensim:
- min_count, then frequent-word subsampling with gensim's keep probability
  p(w) = (sqrt(c_w / t) + 1) * t / c_w, t = sample * (retained words), capped at 1;
- a dynamic window: each center word draws b in [0, window) and sees window - b
  words on each side (within its sentence, after subsampling);
- negatives drawn from the unigram distribution raised to 0.75 (a lookup table);
- plain SGD, learning rate decaying linearly from `lr` to `min_lr` over all words;
- gensim's direction: for skip-gram the input vector of each context word predicts
  the center word; for CBOW the mean of the context input vectors does, and each
  context word receives the whole error (cbow_mean=1).

For speed the updates are hand-written (no autograd) and batched: a batch holds the
windows of `batch_size` center words, gathered with index_select, scored with bmm and
written back with index_add_. Skip-gram shares one set of `negative` samples across
the context words of a window (the "negative sample sharing" of Ji et al. 2016,
"Parallelizing Word2Vec in Shared and Distributed Memory"), which turns many small
dot products into one small matrix product; `shared_negatives=False` draws them per
(context, center) pair, as gensim does. A summed batch update cannot correct itself the
way sequential SGD does, so a row hit more than `max_row_updates` times in one step has
its update scaled down (without this, rare bursts blew single rows up to norms of 200).
On CPU, `workers` Hogwild threads play the part of gensim's worker threads. Only the input
vectors are shipped; the Encoder reads them without importing torch.
"""
from __future__ import annotations

import io
import json
import logging
import threading
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable

import numpy as np

from . import checkpoint
from .encoder import Encoded, Encoder, WordNotFound
from .tokens import Token, find_all
from .vocab import Vocab

log = logging.getLogger(__name__)
LAYER_NAME = "type vector (word2vec)"
TABLE_SIZE = 10_000_000  # entries in the negative-sampling table (word2vec.c uses 1e8)
LOSS_EVERY = 8  # steps between loss measurements


@dataclass
class Word2VecConfig:
    sg: bool = True  # skip-gram (True) or CBOW (False)
    dim: int = 128  # vector size
    window: int = 5  # max words on each side; the effective window is drawn from 1..window
    negative: int = 5  # negative samples per positive example
    sample: float = 1e-3  # subsampling threshold (0 = off)
    min_count: int = 5  # drop words rarer than this
    epochs: int = 5  # passes over the corpus
    lr: float = 0.025  # initial learning rate (gensim's alpha)
    min_lr: float = 1e-4  # final learning rate (gensim's min_alpha)
    batch_size: int = 256  # center words (with their windows) per SGD step
    max_row_updates: int = 128  # a table row hit more often in one step has its summed update scaled to this many (0 = off)
    seed: int = 0  # vector init, subsampling, windows and negatives
    max_vocab: int = 50000  # keep at most this many most frequent words (0 = no cap)
    ns_exponent: float = 0.75  # exponent of the unigram distribution for negatives
    shared_negatives: bool = True  # skip-gram: one negative set per window instead of per pair

    def __post_init__(self):
        if self.dim <= 0 or self.window <= 0 or self.negative <= 0 or self.epochs <= 0 or self.batch_size <= 0:
            raise ValueError("dim, window, negative, epochs and batch_size must be positive")
        if self.min_count < 1 or self.max_vocab < 0 or self.max_row_updates < 0:
            raise ValueError("min_count must be >= 1, max_vocab and max_row_updates >= 0")
        if not 0 <= self.sample < 1:
            raise ValueError("sample must be in [0, 1)")
        if not 0 < self.min_lr <= self.lr:
            raise ValueError("need 0 < min_lr <= lr")


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


def build_vocab(sentences: list[list[str]], cfg: Word2VecConfig) -> Vocab:
    return Vocab.build(sentences, min_count=cfg.min_count, max_size=cfg.max_vocab or None)


# -- vectors users already know ---------------------------------------------------------------
class KeyedVectors:
    """gensim-like read access: kv["词"], "词" in kv, most_similar, similarity, index_to_key, vectors."""

    def __init__(self, words: list[str], vectors: np.ndarray, counts: list[int] | None = None):
        if len(words) != len(vectors):
            raise ValueError(f"{len(words)} words but {len(vectors)} vectors")
        self.index_to_key = list(words)
        self.key_to_index = {w: i for i, w in enumerate(self.index_to_key)}
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)  # (V, D)
        self.counts = list(counts) if counts is not None else None
        self._normed = None

    def __len__(self) -> int:
        return len(self.index_to_key)

    def __contains__(self, word: str) -> bool:
        return word in self.key_to_index

    def __getitem__(self, word: str) -> np.ndarray:
        if word not in self.key_to_index:
            raise KeyError(f"'{word}' is not in the vocabulary")
        return self.vectors[self.key_to_index[word]]

    @property
    def vector_size(self) -> int:
        return self.vectors.shape[1]

    def get_normed_vectors(self) -> np.ndarray:
        if self._normed is None:
            n = np.linalg.norm(self.vectors, axis=1, keepdims=True)
            self._normed = self.vectors / np.maximum(n, 1e-12)
        return self._normed

    def similarity(self, w1: str, w2: str) -> float:
        a, b = self[w1], self[w2]
        return float(a @ b / max(float(np.linalg.norm(a) * np.linalg.norm(b)), 1e-12))

    def most_similar(self, positive=None, negative=None, topn: int = 10) -> list[tuple[str, float]]:
        """Words closest (cosine) to the mean of the unit vectors of `positive` minus those of `negative`.

        Entries may be words or vectors; input words are left out of the answer, as in gensim.
        """
        positive = [positive] if isinstance(positive, (str, np.ndarray)) else list(positive or [])
        negative = [negative] if isinstance(negative, (str, np.ndarray)) else list(negative or [])
        if not positive and not negative:
            raise ValueError("most_similar needs at least one positive or negative word")
        m = self.get_normed_vectors()
        parts, skip = [], set()
        for sign, items in ((1.0, positive), (-1.0, negative)):
            for x in items:
                if isinstance(x, str):
                    self[x]  # KeyError for an unknown word
                    skip.add(self.key_to_index[x])
                    parts.append(sign * m[self.key_to_index[x]])
                else:
                    v = np.asarray(x, dtype=np.float32)
                    parts.append(sign * v / max(float(np.linalg.norm(v)), 1e-12))
        q = np.mean(parts, axis=0)
        q = q / max(float(np.linalg.norm(q)), 1e-12)
        sims = m @ q  # (V,)
        k = min(len(sims), topn + len(skip))
        top = np.argpartition(-sims, k - 1)[:k] if k < len(sims) else np.arange(len(sims))
        top = top[np.argsort(-sims[top], kind="stable")]
        return [(self.index_to_key[i], float(sims[i])) for i in top if i not in skip][:topn]


# -- training ----------------------------------------------------------------------------------
class _SGNS:
    """The two embedding tables and the hand-written negative-sampling updates."""

    def __init__(self, n_words: int, cfg: Word2VecConfig, device):
        import torch

        g = torch.Generator().manual_seed(cfg.seed)
        self.cfg, self.device = cfg, device
        # gensim's init: inputs uniform in +-0.5/dim, outputs zero
        self.w_in = ((torch.rand(n_words, cfg.dim, generator=g) - 0.5) / cfg.dim).to(device)  # (V, D)
        self.w_out = torch.zeros(n_words, cfg.dim, device=device)  # (V, D)
        self.label = torch.zeros(cfg.negative + 1, device=device)
        self.label[0] = 1.0

    def step_windows(self, center, ctx, valid, neg, lr: float, with_loss: bool = True) -> float:
        """One SGD step on B windows. center (B,), ctx/valid (B, C), neg (B, K). Returns the summed loss (or 0)."""
        import torch

        D = self.cfg.dim
        tgt = torch.cat([center[:, None], neg], 1)  # (B, K+1): the center word, then negatives
        keep = torch.cat([torch.ones_like(center[:, None], dtype=torch.bool), neg != center[:, None]], 1)  # (B, K+1)
        label = self.label  # (K+1,): 1 for the center word, 0 for negatives
        vf = valid.float()  # (B, C)
        h_ctx = self.w_in.index_select(0, ctx.reshape(-1)).view(*ctx.shape, D)  # (B, C, D)
        c = self.w_out.index_select(0, tgt.reshape(-1)).view(*tgt.shape, D)  # (B, K+1, D)
        if self.cfg.sg:
            f = torch.bmm(h_ctx, c.transpose(1, 2))  # (B, C, K+1)
            mask = vf[:, :, None] * keep[:, None, :]  # (B, C, K+1)
            g = (label - torch.sigmoid(f)) * mask * lr  # (B, C, K+1)
            d_in = torch.bmm(g, c)  # (B, C, D)
            d_out = torch.bmm(g.transpose(1, 2), h_ctx)  # (B, K+1, D)
            hits = vf.sum(1)  # (B,): each target row of a window is updated once per valid context
        else:  # CBOW: the mean of the context vectors predicts the center
            n = vf.sum(1, keepdim=True).clamp(min=1.0)  # (B, 1)
            h = (h_ctx * vf[:, :, None]).sum(1) / n  # (B, D)
            f = torch.bmm(c, h[:, :, None]).squeeze(2)  # (B, K+1)
            mask = keep * (vf.sum(1, keepdim=True) > 0)  # (B, K+1)
            g = (label - torch.sigmoid(f)) * mask * lr  # (B, K+1)
            d_in = torch.bmm(g[:, None, :], c).expand(-1, ctx.shape[1], -1) * vf[:, :, None]  # (B, C, D)
            d_out = g[:, :, None] * h[:, None, :]  # (B, K+1, D)
            hits = (vf.sum(1) > 0).float()  # (B,)
        if self.cfg.max_row_updates:
            d_out, d_in = self._cap_rows(d_out, tgt, hits[:, None].expand(tgt.shape), d_in, ctx, vf)
        self.w_out.index_add_(0, tgt.reshape(-1), d_out.reshape(-1, D))
        self.w_in.index_add_(0, ctx.reshape(-1), d_in.reshape(-1, D))
        if not with_loss:
            return 0.0
        return float(-(torch.nn.functional.logsigmoid(torch.where(label > 0, f, -f)) * mask).sum())

    def _cap_rows(self, d_out, tgt, out_hits, d_in, ctx, in_hits):
        """(d_out, d_in) with the updates of rows that sum n > max_row_updates contributions in this step scaled
        by max_row_updates / n (output rows counted at tgt, input rows at ctx, both in one bincount).

        Sequential SGD corrects itself after each of a row's updates; a summed batch update cannot, and a row
        hit hundreds of times in one step (a run of the same word, a very frequent negative) can overshoot."""
        import torch

        V = len(self.w_in)
        idx = torch.cat([tgt.reshape(-1), ctx.reshape(-1) + V])  # output rows, then input rows
        n = torch.bincount(idx, torch.cat([out_hits.reshape(-1), in_hits.reshape(-1)]).float(), 2 * V)  # (2V,)
        if float(n.max()) <= self.cfg.max_row_updates:  # the usual case: plain SGD
            return d_out, d_in
        scale = (self.cfg.max_row_updates / n.clamp(min=1)).clamp(max=1.0)
        return d_out * scale[tgt].unsqueeze(-1), d_in * scale[ctx + V].unsqueeze(-1)

    def step_pairs(self, center, ctx, neg, lr: float) -> float:
        """gensim's exact skip-gram: P (context, center) pairs, K fresh negatives each. center/ctx (P,), neg (P, K)."""
        import torch

        D = self.cfg.dim
        tgt = torch.cat([center[:, None], neg], 1)  # (P, K+1)
        keep = torch.cat([torch.ones_like(center[:, None], dtype=torch.bool), neg != center[:, None]], 1).float()
        label = self.label  # (K+1,)
        h = self.w_in.index_select(0, ctx)  # (P, D)
        c = self.w_out.index_select(0, tgt.reshape(-1)).view(*tgt.shape, D)  # (P, K+1, D)
        f = torch.bmm(c, h[:, :, None]).squeeze(2)  # (P, K+1)
        g = (label - torch.sigmoid(f)) * keep * lr  # (P, K+1)
        d_in = torch.bmm(g[:, None, :], c).squeeze(1)  # (P, D)
        d_out = g[:, :, None] * h[:, None, :]  # (P, K+1, D)
        if self.cfg.max_row_updates:
            d_out, d_in = self._cap_rows(d_out, tgt, torch.ones_like(tgt, dtype=torch.float32),
                                         d_in, ctx, torch.ones_like(ctx, dtype=torch.float32))
        self.w_out.index_add_(0, tgt.reshape(-1), d_out.reshape(-1, D))
        self.w_in.index_add_(0, ctx, d_in)
        loss = -(torch.nn.functional.logsigmoid(torch.where(label > 0, f, -f)) * keep).sum()
        return float(loss)


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


class _State:
    """Counters shared by the worker threads (Hogwild: the tables themselves are updated without locks)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.done = self.steps = self.pairs = self.loss_n = 0
        self.loss_sum = 0.0
        self.lr = 0.0
        self.stop = False


def _worker(model: _SGNS, ids, sid, chunks, st: _State, rng, table, total: int, raw_per_kept: float, deadline: float,
            report: Callable[[], None] | None):
    """Train on chunks (lo, hi) of kept positions taken from the shared iterator `chunks`."""
    import torch

    cfg, dev = model.cfg, model.device
    # a small vocabulary gets smaller batches: many summed updates to one row in a step would diverge
    K, B = cfg.negative, min(cfg.batch_size, max(16, len(model.w_in) // 4))
    while not st.stop:
        with st.lock:
            lo, hi = next(chunks, (None, None))
        if lo is None:
            return
        lr = max(cfg.min_lr, cfg.lr - (cfg.lr - cfg.min_lr) * st.done / total)  # linear decay by words done
        loss_sum, loss_n, steps, pairs = 0.0, 0, 0, 0
        for center, ctx, valid in _windows(ids, sid, lo, hi, cfg.window, rng):
            if cfg.sg and not cfg.shared_negatives:  # gensim's exact sampling: K fresh negatives per pair
                ctr = np.broadcast_to(center[:, None], ctx.shape)[valid]
                cx = ctx[valid]
                nb = B * (cfg.window + 1)  # as many pairs as B windows hold on average
                for a in range(0, len(cx), nb):
                    neg = table[rng.integers(0, len(table), (len(cx[a:a + nb]), K))]
                    t = [torch.from_numpy(x).to(dev) for x in (ctr[a:a + nb], cx[a:a + nb], neg)]
                    loss_sum += model.step_pairs(*t, lr)
                    loss_n += len(t[0])
                    steps += 1
                pairs += len(cx)
                continue
            neg = table[rng.integers(0, len(table), (len(center), K))]  # (m, K): K negatives per window
            arrays = [torch.from_numpy(x).to(dev) for x in (center, ctx, valid, neg)]  # sliced below without copies
            for a in range(0, len(center), B):
                t = [x[a:a + B] for x in arrays]
                with_loss = steps % LOSS_EVERY == 0  # the loss is only monitored: a sample of steps is enough
                loss_sum += model.step_windows(*t, lr, with_loss)
                if with_loss:
                    loss_n += int(t[2].sum()) if cfg.sg else len(t[0])
                steps += 1
            pairs += int(valid.sum())
        with st.lock:
            st.done += round((hi - lo) * raw_per_kept)
            st.steps, st.pairs, st.lr = st.steps + steps, st.pairs + pairs, lr
            st.loss_sum, st.loss_n = st.loss_sum + loss_sum, st.loss_n + loss_n
            if deadline and time.perf_counter() > deadline:
                st.stop = True
        if report is not None:
            report()


def fit(sentences: list[list[str]], cfg: Word2VecConfig, device="auto", time_limit: float = 0.0,
        callback: Callable[[dict], None] | None = None, progress: bool = True, workers: int = 1) -> tuple[KeyedVectors, dict]:
    """Train on word lists; returns the input vectors as KeyedVectors and a training summary.

    On CPU the torch ops run single-threaded; workers > 1 runs that many Hogwild threads (as gensim's
    workers) that update the shared tables without locks. workers = 1 is deterministic for a given seed.
    """
    import torch

    from .training.trainer import resolve_device

    dev = resolve_device(device) if isinstance(device, str) else device
    t0 = time.perf_counter()
    deadline = t0 + time_limit if time_limit else 0.0
    vocab = build_vocab(sentences, cfg)
    if len(vocab) < 2:
        raise ValueError(f"only {len(vocab)} words reach min_count={cfg.min_count}; give more text or lower min_count")
    raw_words = sum(len(s) for s in sentences)
    stoi = vocab.stoi
    ids_all = np.fromiter((stoi.get(w, -1) for s in sentences for w in s), dtype=np.int64)
    lens = np.fromiter((len(s) for s in sentences), dtype=np.int64)
    sid_all = np.repeat(np.arange(len(lens)), lens)
    known = ids_all >= 0  # out-of-vocabulary words are removed before windowing, as in gensim
    ids_all, sid_all = ids_all[known], sid_all[known]
    counts = np.array(vocab.counts, dtype=np.float64)
    keep_p = keep_probabilities(counts, cfg.sample)
    table = negative_table(counts, cfg.ns_exponent)
    rng = np.random.default_rng(cfg.seed)
    rngs = [rng] + [np.random.default_rng([cfg.seed, i]) for i in range(1, workers)]
    model = _SGNS(len(vocab), cfg, dev)
    total = raw_words * cfg.epochs
    st = _State()
    epoch_loss = []
    chunk = cfg.batch_size * 16  # kept words per round of window generation
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=total, unit="word", unit_scale=True, desc="word2vec", mininterval=2.0, smoothing=0.1)
    t_train = time.perf_counter()
    shown = [0]
    ep = 0

    def report():
        if bar is not None:
            bar.update(st.done - shown[0])
        shown[0] = st.done
        if callback is not None:
            callback({"epoch": ep, "words": st.done, "total": total, "lr": st.lr,
                      "words_per_s": st.done / max(time.perf_counter() - t_train, 1e-9)})

    threads_before = torch.get_num_threads()
    if dev.type == "cpu":  # the ops are small: one thread each is faster than intra-op threads (and Hogwild adds workers)
        torch.set_num_threads(1)
    try:
        for ep in range(cfg.epochs):
            keep = rng.random(len(ids_all)) < keep_p[ids_all]  # subsampling, redrawn every epoch
            ids, sid = ids_all[keep], sid_all[keep]
            raw_per_kept = raw_words / max(len(ids), 1)
            chunks = iter([(lo, min(lo + chunk, len(ids))) for lo in range(0, len(ids), chunk)])
            st.loss_sum, st.loss_n = 0.0, 0
            args = (model, ids, sid, chunks, st)
            if workers == 1:
                _worker(*args, rng, table, total, raw_per_kept, deadline, report)
            else:
                ts = [threading.Thread(target=_worker, args=(*args, r, table, total, raw_per_kept, deadline, None), daemon=True)
                      for r in rngs]
                for t in ts:
                    t.start()
                while alive := [t for t in ts if t.is_alive()]:
                    alive[0].join(timeout=1.0)
                    report()
                for t in ts:
                    t.join()
            epoch_loss.append(round(st.loss_sum / st.loss_n, 4) if st.loss_n else None)
            log.info("epoch %d: loss per example %s, lr %.5f", ep + 1, epoch_loss[-1], st.lr)
            if st.stop:
                log.warning("time limit of %.0f s reached in epoch %d; stopping early", time_limit, ep + 1)
                break
    finally:
        torch.set_num_threads(threads_before)
        if bar is not None:
            bar.close()
    wall = time.perf_counter() - t_train
    kv = KeyedVectors(vocab.itos, model.w_in.float().cpu().numpy(), vocab.counts)
    summary = {"steps": st.steps, "tokens_seen": int(st.done), "pairs_seen": int(st.pairs), "device": str(dev),
               "workers": workers, "wall_s": round(wall, 2), "words_per_s": round(st.done / max(wall, 1e-9)),
               "vocab_size": len(vocab), "raw_words_per_epoch": raw_words, "epoch_loss": epoch_loss,
               "stopped_early": st.stop}
    return kv, summary


# -- validation --------------------------------------------------------------------------------
def pd_major_tags() -> tuple[dict[str, str], list[str]]:
    """Each People's Daily word's most frequent gold tag, and PD words by frequency (most frequent first)."""
    from collections import Counter, defaultdict

    from . import corpus

    by_word: dict[str, Counter] = defaultdict(Counter)
    freq: Counter = Counter()
    for p in corpus.peoples_daily():
        for w, t in zip(p.words, p.tags):
            by_word[w][t] += 1
            freq[w] += 1
    major = {w: c.most_common(1)[0][0] for w, c in by_word.items()}
    return major, [w for w, _ in freq.most_common()]


def pos_agreement(words: list[str], vectors: np.ndarray, n_words: int = 2000, topn: int = 10, tags=None) -> dict:
    """POS agreement@topn: over the `n_words` most frequent PD words in the model, the share of each word's
    `topn` nearest neighbours (cosine, whole vocabulary) whose most frequent gold tag equals the word's own.
    Neighbours without a PD tag count as disagreeing."""
    major, by_freq = tags or pd_major_tags()
    index = {w: i for i, w in enumerate(words)}
    probe = [w for w in by_freq if w in index][:n_words]
    m = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    q = np.array([index[w] for w in probe])
    hits = 0
    for a in range(0, len(q), 500):
        sims = m[q[a:a + 500]] @ m.T  # (b, V)
        sims[np.arange(len(sims)), q[a:a + 500]] = -np.inf
        nn = np.argpartition(-sims, topn, axis=1)[:, :topn]  # (b, topn)
        for w, row in zip(probe[a:a + 500], nn):
            hits += sum(major.get(words[j]) == major[w] for j in row)
    return {"pos_agreement_at_10" if topn == 10 else f"pos_agreement_at_{topn}": round(hits / max(len(probe) * topn, 1), 4),
            "pos_words": len(probe)}


EXAMPLE_WORDS = ("中国", "苹果", "发展", "经济", "酒店", "好")


# -- presets and the checkpoint ----------------------------------------------------------------
PRESETS: dict[str, tuple[Word2VecConfig, int | None]] = {
    # (config, number of training sentences used; None = all of the train split)
    "tiny": (Word2VecConfig(dim=32, window=3, epochs=2, min_count=2, max_vocab=5000, batch_size=256), 2000),
    "default": (Word2VecConfig(sg=True, dim=128, window=5, negative=5, sample=1e-3, min_count=5, epochs=5,
                               max_vocab=50000, seed=0), None),
}


def train(preset: str = "default", device: str = "auto", out=None, seed: int = 0, time_limit: float = 0.0,
          callback: Callable[[dict], None] | None = None, paragraphs=None, corpus_path=None) -> Path:
    """Train on the train split of all sources (or on `paragraphs`, or a user's corpus at `corpus_path`, streamed
    through a segmented cache file) and save a checkpoint; returns its folder."""
    import torch

    from . import corpus

    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; choose one of {list(PRESETS)}")
    cfg, n_sent = PRESETS[preset]
    cfg = replace(cfg, seed=seed)
    if corpus_path is not None:
        sents = corpus.UserSentences(corpus.user_files(corpus_path))
        n_sent = None
    elif paragraphs is not None:
        sents = [p.words[a:b] for p in paragraphs for a, b in p.sentences()]
    else:
        sents = corpus.sentences("all", "train")
    if n_sent is not None and len(sents) > n_sent:  # an even sample across both sources, plus the lecture's 苹果
        sents = sents[::len(sents) // n_sent][:n_sent] + [x for x in sents if "苹果" in x]
    log.info("word2vec preset %s: %d sentences, %d words; %s", preset, len(sents), sum(map(len, sents)), cfg)
    kv, summary = fit(sents, cfg, device=device, time_limit=time_limit, callback=callback)
    if paragraphs is None and corpus_path is None and preset != "tiny":
        summary.update(pos_agreement(kv.index_to_key, kv.vectors))
    summary["most_similar"] = {w: [[x, round(s, 3)] for x, s in kv.most_similar(w, topn=5)] for w in EXAMPLE_WORDS if w in kv}
    summary.update(preset=preset, sentences=len(sents), corpus=str(corpus_path) if corpus_path else "pd+reviews+supplement (train split)")
    d = Path(out) if out is not None else checkpoint.CHECKPOINT_DIR / "word2vec"
    vocab = Vocab(kv.index_to_key, kv.counts)
    checkpoint.save(d, "word2vec", asdict(cfg), vocab.to_json(), {"in_vectors": torch.from_numpy(kv.vectors)}, summary)
    log.info("saved %s (%s)", d, {k: summary[k] for k in ("wall_s", "words_per_s", "vocab_size")})
    return d


_NP_STORAGE = {"HalfStorage": np.float16, "FloatStorage": np.float32, "DoubleStorage": np.float64, "LongStorage": np.int64}


def read_state_numpy(path: Path) -> dict[str, np.ndarray]:
    """Read a state dict of plain CPU tensors written by torch.save, with numpy only.

    A restricted unpickler: only the three globals torch writes for such tensors are allowed (like weights_only).
    """
    import collections
    import pickle
    import zipfile

    with zipfile.ZipFile(path) as z:
        root = z.namelist()[0].split("/")[0]
        if z.read(f"{root}/byteorder") != b"little":
            raise ValueError("not a little-endian checkpoint")

        def rebuild(storage, offset, size, stride, *_):
            item = storage.itemsize
            return np.lib.stride_tricks.as_strided(storage[offset:], tuple(size), tuple(s * item for s in stride)).copy()

        class Restricted(pickle.Unpickler):
            def find_class(self, module, name):
                if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
                    return rebuild
                if (module, name) == ("collections", "OrderedDict"):
                    return collections.OrderedDict
                if module == "torch" and name in _NP_STORAGE:
                    return name
                raise pickle.UnpicklingError(f"{module}.{name} is not allowed in a checkpoint")

            def persistent_load(self, pid):
                _, storage, key, _, numel = pid
                a = np.frombuffer(z.read(f"{root}/data/{key}"), dtype=_NP_STORAGE[storage])
                if len(a) != numel:
                    raise ValueError("storage size mismatch")
                return a

        sd = Restricted(io.BytesIO(z.read(f"{root}/data.pkl"))).load()
    if not isinstance(sd, dict) or not all(isinstance(v, np.ndarray) for v in sd.values()):
        raise ValueError("not a state dict of tensors")
    return sd


# -- the Encoder -------------------------------------------------------------------------------
class Word2VecEncoder(Encoder):
    """One layer, the type vector: the same vector for a word in every context. Unknown words get zeros."""

    kind = "word2vec"

    def __init__(self, name: str, config: dict, summary: dict, kv: KeyedVectors, path: Path | None = None):
        super().__init__(name, config, summary, path)
        self.kv = kv

    @classmethod
    def from_checkpoint(cls, path) -> "Word2VecEncoder":
        d = checkpoint.resolve(path)
        fix = checkpoint.rebuild_command("word2vec")
        try:  # fast path without torch (importing it takes seconds): `python -m ctxlib embed` starts quickly
            cfg = checkpoint.read_config(d)
            vocab_json = json.loads((d / "vocab.json").read_text(encoding="utf-8"))
            vec = read_state_numpy(d / "model.pt")["in_vectors"]
        except Exception:  # anything unusual: the torch loader, whose errors name the file and the fix
            cfg, vocab_json, sd = checkpoint.load(d)
            vec = sd["in_vectors"].numpy() if "in_vectors" in sd else None
        try:
            vocab = Vocab.from_json(vocab_json)
            if vec is None:
                raise KeyError("no 'in_vectors' tensor")
        except (KeyError, TypeError, ValueError) as e:
            raise checkpoint.CheckpointError(f"{d / 'model.pt'} or {d / 'vocab.json'} is not a word2vec checkpoint ({e}). Rebuild with: {fix}") from e
        dim = int(cfg["config"].get("dim", -1))
        if tuple(vec.shape) != (len(vocab), dim):
            raise checkpoint.CheckpointError(f"{d / 'model.pt'} holds vectors {tuple(vec.shape)}, but {d / 'config.json'} and "
                                             f"vocab.json say ({len(vocab)}, {dim}). Rebuild with: {fix}")
        kv = KeyedVectors(vocab.itos, vec.astype(np.float32), vocab.counts)
        return cls(d.name, cfg["config"], cfg.get("summary", {}), kv, d)

    @property
    def layer_names(self) -> list[str]:
        return [LAYER_NAME]

    def _lookup(self, token: str) -> int | None:
        from .tokens import norm_token

        i = self.kv.key_to_index.get(token)
        if i is None:
            i = self.kv.key_to_index.get(norm_token(token))
        return i

    def in_vocab(self, word: str) -> bool:
        return self._lookup(word) is not None

    def _encode_tokens(self, batch: list[list[Token]], texts: list[str]) -> list[Encoded]:
        out = []
        for toks, text in zip(batch, texts):
            idx = [self._lookup(t) for t, _, _ in toks]
            layer = np.zeros((len(toks), self.kv.vector_size), np.float32)  # (T, D)
            hit = [k for k, i in enumerate(idx) if i is not None]
            if hit:
                layer[hit] = self.kv.vectors[[idx[k] for k in hit]]
            out.append(Encoded(text, [t for t, _, _ in toks], [(a, b) for _, a, b in toks], layer[None],
                               self.layer_names, None, False, [i is not None for i in idx]))
        return out

    def word_vectors_with_tokens(self, texts: list[str], word: str, occurrence: int = 0):
        """The type vector repeated for each text; no segmentation needed, since the context cannot matter."""
        for i, t in enumerate(texts):
            if not find_all(t[:2000], word):
                raise WordNotFound(word, i, t)
        i = self._lookup(word)
        v = self.kv.vectors[i] if i is not None else np.zeros(self.kv.vector_size, np.float32)
        return np.repeat(v[None, None, :], len(texts), axis=0).astype(np.float32), [[word] for _ in texts]

    def vocab_words(self, max_words: int = 10000) -> list[str]:
        return self.kv.index_to_key[:max_words]

    def type_matrix(self, max_words: int = 10000) -> tuple[list[str], np.ndarray]:
        """The normalised embedding table as (words, (n, 1, dim)): no encoding needed."""
        return self.kv.index_to_key[:max_words], self.kv.get_normed_vectors()[:max_words, None, :]

    def type_vectors(self, layer: int = 0, max_words: int = 10000) -> tuple[list[str], np.ndarray]:
        if layer != 0:
            raise IndexError(f"word2vec has one layer (0), asked for {layer}")
        return self.kv.index_to_key[:max_words], self.kv.get_normed_vectors()[:max_words]

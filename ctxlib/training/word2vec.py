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

Two backends train the same tables (`fit(backend=...)`, or the environment variable
CTXLIB_W2V_BACKEND): on CPU ("auto" = "numba") a compiled kernel in ctxlib.training.sgns_numba runs
word2vec.c's loop, one center word after the other with sequential SGD updates; on CUDA ("auto" =
"torch") the batched, hand-written updates in ctxlib.training.sgns (bmm and index_add_, a row cap
for the summed updates). `backend="torch"` forces the torch path on CPU too, for comparison.
On CPU, `workers` Hogwild threads play the part of gensim's worker threads. The config, the vectors
and the Encoder are in ctxlib.models.word2vec. Only the input vectors are shipped; the Encoder reads
them without importing torch. The sampling tables, the windows and a chunk's updates are in
ctxlib.training.word2vec_sgd.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import asdict
from functools import partial
from pathlib import Path
from typing import Callable, NamedTuple

import numpy as np

from .. import checkpoint
from ..models.word2vec import KeyedVectors, Word2VecConfig
from ..vocab import Vocab
from . import sgns_numba
from .presets import Preset, named
from .sgns import SGNS
from .word2vec_pos import pd_major_tags, pos_agreement  # noqa: F401  (re-exported: tests and bench/ import them from here)
from .word2vec_sgd import WorkerState, keep_probabilities, negative_table, numba_chunk, torch_chunk, worker

log = logging.getLogger(__name__)


def build_vocab(sentences: list[list[str]], cfg: Word2VecConfig) -> Vocab:
    return Vocab.build(sentences, min_count=cfg.min_count, max_size=cfg.max_vocab or None)


BACKENDS = ("auto", "numba", "torch")


def resolve_backend(backend: str | None, device_type: str) -> str:
    """ "numba" or "torch": auto (or None, read from CTXLIB_W2V_BACKEND) picks numba on CPU when it imports."""
    backend = backend or os.environ.get("CTXLIB_W2V_BACKEND") or "auto"
    if backend not in BACKENDS:
        raise ValueError(f"unknown word2vec backend {backend!r}; choose one of {BACKENDS}")
    if backend == "numba" and device_type != "cpu":
        raise ValueError("the numba backend runs on CPU only; use device='cpu' or backend='torch'")
    if backend == "auto":
        return "numba" if device_type == "cpu" and sgns_numba.available() else "torch"
    return backend


class _Corpus(NamedTuple):
    """The training text as arrays: the known words' ids and sentence numbers, with what sampling needs."""

    vocab: Vocab
    raw_words: int  # words per epoch before min_count and subsampling
    ids: np.ndarray  # (N,) vocabulary ids of the in-vocabulary words, in order
    sid: np.ndarray  # (N,) the sentence each of them belongs to
    keep_p: np.ndarray  # (V,) subsampling's keep probability per word
    table: np.ndarray  # the negative-sampling table


def _encode(sentences: list[list[str]], cfg: Word2VecConfig) -> _Corpus:
    """Build the vocabulary and turn the sentences into id arrays (out-of-vocabulary words dropped, as in gensim)."""
    vocab = build_vocab(sentences, cfg)
    if len(vocab) < 2:
        raise ValueError(f"only {len(vocab)} words reach min_count={cfg.min_count}; give more text or lower min_count")
    raw_words = sum(len(s) for s in sentences)
    stoi = vocab.stoi
    ids_all = np.fromiter((stoi.get(w, -1) for s in sentences for w in s), dtype=np.int64)
    lens = np.fromiter((len(s) for s in sentences), dtype=np.int64)
    sid_all = np.repeat(np.arange(len(lens)), lens)
    known = ids_all >= 0  # out-of-vocabulary words are removed before windowing, as in gensim
    counts = np.array(vocab.counts, dtype=np.float64)
    return _Corpus(
        vocab,
        raw_words,
        ids_all[known],
        sid_all[known],
        keep_probabilities(counts, cfg.sample),
        negative_table(counts, cfg.ns_exponent),
    )


def _trainer_factory(
    model: SGNS, cfg: Word2VecConfig, backend: str, workers: int, sigmoid: str, table, rng: np.random.Generator
) -> Callable[[np.ndarray, np.ndarray], list[Callable]]:
    """A function that, given an epoch's kept (ids, sid), returns one train(lo, hi, lr) per worker."""
    if backend == "numba":  # one random state per worker, from the seed (worker 0 is the whole run with workers=1)
        nws = [
            sgns_numba.Worker(cfg.dim, cfg.negative, int(np.random.default_rng([cfg.seed, 7, i]).integers(2**63)))
            for i in range(workers)
        ]
        exp_table = sgns_numba.sigmoid_table() if sigmoid == "table" else None
        sgns_numba.kernel()  # the dispatcher is made here, before any worker thread calls it
        return lambda ids, sid: [partial(numba_chunk, model, ids, sid, nw, table, exp_table) for nw in nws]
    rngs = [rng] + [np.random.default_rng([cfg.seed, i]) for i in range(1, workers)]
    return lambda ids, sid: [partial(torch_chunk, model, ids, sid, r, table) for r in rngs]


class _Reporter:
    """Moves the progress bar and calls the caller's callback; a callback returning True stops the training."""

    def __init__(self, state: WorkerState, total: int, bar, callback: Callable[[dict], bool | None] | None):
        self.state, self.total, self.bar, self.callback = state, total, bar, callback
        self.epoch, self.shown, self.t_train = 0, 0, time.perf_counter()

    def __call__(self):
        state = self.state
        if self.bar is not None:
            self.bar.update(state.done - self.shown)
        self.shown = state.done
        if self.callback is None:
            return
        info = {
            "epoch": self.epoch,
            "words": state.done,
            "total": self.total,
            "lr": state.lr,
            "steps": state.steps,
            "loss_sum": state.loss_sum,
            "loss_n": state.loss_n,  # this epoch's so far
            "words_per_s": state.done / max(time.perf_counter() - self.t_train, 1e-9),
        }
        if self.callback(info) is True:  # the caller asks to stop (the training page's Cancel): as at the time limit
            state.stop = True


def _run_workers(
    cfg: Word2VecConfig,
    chunks,
    state: WorkerState,
    trainers: list[Callable],
    threaded: bool,
    total: int,
    raw_per_kept: float,
    deadline: float,
    report: _Reporter,
):
    """One epoch's chunks: in this thread, or in Hogwild threads (reporting about once a second) when `threaded`."""
    args = (cfg, chunks, state)
    if not threaded:
        worker(*args, trainers[0], total, raw_per_kept, deadline, report)
        return
    ts = [
        threading.Thread(target=worker, args=(*args, t, total, raw_per_kept, deadline, None), daemon=True)
        for t in trainers
    ]
    for t in ts:
        t.start()
    while alive := [t for t in ts if t.is_alive()]:
        alive[0].join(timeout=1.0)
        report()
    for t in ts:
        t.join()


def _epochs(
    cfg: Word2VecConfig,
    data: _Corpus,
    rng: np.random.Generator,
    state: WorkerState,
    trainers_for: Callable,
    workers: int,
    deadline: float,
    time_limit: float,
    report: _Reporter,
) -> list[float | None]:
    """The training loop: subsample, cut into chunks and train, epoch after epoch; returns each epoch's loss."""
    epoch_loss = []
    chunk = cfg.batch_size * 16  # kept words per round of window generation
    total = data.raw_words * cfg.epochs
    for ep in range(cfg.epochs):
        report.epoch = ep
        keep = rng.random(len(data.ids)) < data.keep_p[data.ids]  # subsampling, redrawn every epoch
        ids, sid = data.ids[keep], data.sid[keep]
        raw_per_kept = data.raw_words / max(len(ids), 1)
        chunks = iter([(lo, min(lo + chunk, len(ids))) for lo in range(0, len(ids), chunk)])
        state.loss_sum, state.loss_n = 0.0, 0
        _run_workers(cfg, chunks, state, trainers_for(ids, sid), workers != 1, total, raw_per_kept, deadline, report)
        epoch_loss.append(round(state.loss_sum / state.loss_n, 4) if state.loss_n else None)
        log.info("epoch %d: loss per example %s, lr %.5f", ep + 1, epoch_loss[-1], state.lr)
        if state.stop:
            log.warning(
                "%s in epoch %d; stopping early",
                f"time limit of {time_limit:.0f} s reached"
                if deadline and time.perf_counter() > deadline
                else "stop asked by the callback",
                ep + 1,
            )
            break
    return epoch_loss


def fit(
    sentences: list[list[str]],
    cfg: Word2VecConfig,
    device="auto",
    time_limit: float = 0.0,
    callback: Callable[[dict], bool | None] | None = None,
    progress: bool = True,
    workers: int = 1,
    backend: str | None = None,
    sigmoid: str = "table",
) -> tuple[KeyedVectors, dict]:
    """Train on word lists; returns the input vectors as KeyedVectors and a training summary.

    callback(info) is called with the progress; when it returns True the training stops there, as at the time limit
    (the vectors trained so far are returned, summary["stopped_early"] is True).

    backend: "auto" (numba kernel on CPU, torch on CUDA; None reads CTXLIB_W2V_BACKEND), "numba" or "torch".
    sigmoid (numba only): "table" (gensim's 1,000-entry table, updates with |f| >= 6 skipped; the default: as good
    as "exact" and faster, see ctxlib.training.sgns_numba) or "exact" (1 / (1 + exp(-f)), as the torch path).
    workers > 1 runs that many Hogwild threads (as gensim's workers) that update the shared tables without
    locks; the torch ops then run single-threaded each. workers = 1 is deterministic for a given seed.
    The summary's steps are SGD steps (torch) or chunks of kept words (numba); cpu_s is the process's CPU time.
    """
    import torch

    from ..device import resolve_device

    dev = resolve_device(device) if isinstance(device, str) else device
    backend = resolve_backend(backend, dev.type)
    if sigmoid not in ("exact", "table"):
        raise ValueError(f"sigmoid must be 'exact' or 'table', not {sigmoid!r}")
    deadline = time.perf_counter() + time_limit if time_limit else 0.0
    data = _encode(sentences, cfg)
    rng = np.random.default_rng(cfg.seed)
    model = SGNS(len(data.vocab), cfg, dev)
    trainers_for = _trainer_factory(model, cfg, backend, workers, sigmoid, data.table, rng)
    total, state = data.raw_words * cfg.epochs, WorkerState()
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=total, unit="word", unit_scale=True, desc="word2vec", mininterval=2.0, smoothing=0.1)
    report = _Reporter(state, total, bar, callback)
    t_train, cpu_train = report.t_train, time.process_time()
    threads_before = torch.get_num_threads()
    if (
        dev.type == "cpu"
    ):  # the ops are small: one thread each is faster than intra-op threads (and Hogwild adds workers)
        torch.set_num_threads(1)
    try:
        epoch_loss = _epochs(cfg, data, rng, state, trainers_for, workers, deadline, time_limit, report)
    finally:
        torch.set_num_threads(threads_before)
        if bar is not None:
            bar.close()
    wall, cpu = time.perf_counter() - t_train, time.process_time() - cpu_train
    kv = KeyedVectors(data.vocab.itos, model.w_in.float().cpu().numpy(), data.vocab.counts)
    summary = {
        "steps": state.steps,
        "tokens_seen": int(state.done),
        "pairs_seen": int(state.pairs),
        "device": str(dev),
        "backend": backend,
        "workers": workers,
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "words_per_s": round(state.done / max(wall, 1e-9)),
        "vocab_size": len(data.vocab),
        "raw_words_per_epoch": data.raw_words,
        "epoch_loss": epoch_loss,
        "stopped_early": state.stop,
    }
    if backend == "numba":
        summary["sigmoid"] = sigmoid
    return kv, summary


EXAMPLE_WORDS = ("中国", "苹果", "发展", "经济", "酒店", "好")


# -- presets and the checkpoint ----------------------------------------------------------------
PRESETS: dict[str, Preset] = named(
    {
        # model: the Word2VecConfig (its own epochs and learning rate; steps and lr stay 0);
        # data: sentences = number of training sentences used (None = all of the train split)
        "tiny": Preset(
            model=dict(dim=32, window=3, epochs=2, min_count=2, max_vocab=5000, batch_size=256),
            data=dict(sentences=2000),
        ),
        "default": Preset(
            model=dict(
                sg=True, dim=128, window=5, negative=5, sample=1e-3, min_count=5, epochs=5, max_vocab=50000, seed=0
            ),
            data=dict(sentences=None),
        ),
    }
)


def train(
    preset: Preset | str = "default",
    device: str = "auto",
    out=None,
    seed: int = 0,
    time_limit: float = 0.0,
    callback: Callable[[dict], None] | None = None,
    paragraphs=None,
    corpus_path=None,
    **run_options,
) -> Path:
    """Train on the train split of all sources (or on `paragraphs`, or a user's corpus at `corpus_path`, streamed
    through a segmented cache file) and save a checkpoint; returns its folder. `preset`: a Preset or the name of one
    of PRESETS. word2vec trains in one go: the resumable runs' options (run.RunOptions) are refused when set."""
    import torch

    from .. import corpus, user_text
    from .presets import resolve
    from .run import RunOptions

    RunOptions.refuse("word2vec", run_options)
    plan = resolve("word2vec", preset)
    preset = plan.name
    cfg, n_sent = Word2VecConfig(**{**plan.model, "seed": seed}), plan.data["sentences"]
    if corpus_path is not None:
        sents = user_text.UserSentences(user_text.user_files(corpus_path))
        n_sent = None
    elif paragraphs is not None:
        sents = [p.words[a:b] for p in paragraphs for a, b in p.sentences()]
    else:
        sents = corpus.sentences("all", "train")
    if n_sent is not None and len(sents) > n_sent:  # an even sample across both sources, plus the lecture's 苹果
        sents = sents[:: len(sents) // n_sent][:n_sent] + [x for x in sents if "苹果" in x]
    log.info("word2vec preset %s: %d sentences, %d words; %s", preset, len(sents), sum(map(len, sents)), cfg)
    kv, summary = fit(sents, cfg, device=device, time_limit=time_limit, callback=callback)
    if paragraphs is None and corpus_path is None and preset != "tiny":
        summary.update(pos_agreement(kv.index_to_key, kv.vectors))
    summary["most_similar"] = {
        w: [[x, round(s, 3)] for x, s in kv.most_similar(w, topn=5)] for w in EXAMPLE_WORDS if w in kv
    }
    summary.update(
        preset=preset,
        sentences=len(sents),
        corpus=str(corpus_path) if corpus_path else "pd+reviews+supplement (train split)",
    )
    d = Path(out) if out is not None else checkpoint.CHECKPOINT_DIR / "word2vec"
    vocab = Vocab(kv.index_to_key, kv.counts)
    checkpoint.save(d, "word2vec", asdict(cfg), vocab.to_json(), {"in_vectors": torch.from_numpy(kv.vectors)}, summary)
    log.info("saved %s (%s)", d, {k: summary[k] for k in ("wall_s", "words_per_s", "vocab_size")})
    return d

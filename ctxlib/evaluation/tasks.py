"""Task heads on frozen contextual features, each with its own ScalarMix (Peters et al. 2018, sec. 3.3).

Tasks (People's Daily gold tags and the sentiment reviews):
- "pos": POS tagging (token accuracy);
- "ner": name tagging, nr/ns/nt -> person/place/organisation, other tokens O (token-level F1 over names);
- "sentiment": review polarity (sentence accuracy).

For each task `run_eval` trains, on frozen features of a seeded sample of train-split sentences, and
scores on test-split sentences (the heads are in evaluation/heads.py):
- a linear probe on each single layer (`per_layer_score`) and on the ScalarMix of all layers;
- the task model (a small biLSTM over its own word embeddings) without pretrained features (`baseline_score`),
  with the mixed ELMo vectors as its input (`input_score`, the main `score`), and with them concatenated to
  its hidden layer (`concat_score`) -- the two uses the lecture names;
- the same input use and probe on word2vec vectors (`word2vec_score`, `word2vec_probe_score`).
Each layer's features are standardised on the train sample first, so the mix weights compare layers rather
than their scales. `run_eval` is in evaluation/task_eval.py; this module holds the task samples, the features,
the scores and the app's live mix.
"""

from __future__ import annotations

import logging
import random
import time
from typing import Callable

import numpy as np

from .heads import train_probe

log = logging.getLogger(__name__)

TASKS = ("pos", "ner", "sentiment")
NER_MAP = {"nr": "person", "ns": "place", "nt": "organisation"}
METRICS = {"pos": "accuracy", "ner": "name-token F1", "sentiment": "accuracy"}
MAX_LEN = 80  # words per sentence (longer ones are cut)
N_TRAIN, N_TEST = 3000, 1000  # sentences per eval (ELMo's heads and BERT's fine-tuning use the same ones)
TASK_EPOCHS = 3  # the task model's epochs in run_eval (BERT's feature-based eval trains it as long)
_FEATURES: dict = {}  # in-memory cache of extracted features


def check_task(task: str):
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")


_SAMPLES: dict = {}  # (source, split, limit, seed) -> the drawn sample (fixed by its arguments; POS and NER share one)


def task_sentences(task: str, split: str, limit: int, seed: int = 0) -> tuple[list[list[str]], list]:
    """A seeded sample of at most `limit` sentences: (word lists, labels). Token tasks give one label list per
    sentence; sentiment gives one int per review. The sample is kept in memory: drawing it walks every People's Daily
    sentence (~2 s), which the live mix would otherwise pay on every run before its features are even looked up."""
    check_task(task)
    src = "reviews" if task == "sentiment" else "pd"
    k = (src, split, limit, seed)
    if k not in _SAMPLES:
        _SAMPLES[k] = _draw(src, split, limit, seed)
    sample = _SAMPLES[k]
    if task == "sentiment":
        return [list(w) for w, _ in sample], [y for _, y in sample]
    if task == "pos":
        return [list(w) for w, _ in sample], [list(t) for _, t in sample]
    return [list(w) for w, _ in sample], [[NER_MAP.get(x, "O") for x in t] for _, t in sample]


def _draw(src: str, split: str, limit: int, seed: int) -> list[tuple[list[str], object]]:
    """[(words, review label or PKU tags)] of a seeded sample of `src` ("reviews" or "pd")."""
    from .. import corpus

    if src == "reviews":
        pars = [p for p in corpus.load("reviews", split) if p.words]
        pars = random.Random(f"sentiment-{split}-{seed}").sample(pars, min(limit, len(pars)))
        return [(p.words[:MAX_LEN], int(p.label)) for p in pars]
    sents = []
    for p in corpus.load("pd", split):
        for a, b in p.sentences():
            if b - a >= 3:
                sents.append((p.words[a:b][:MAX_LEN], p.tags[a:b][:MAX_LEN]))
    return random.Random(f"pd-{split}-{seed}").sample(sents, min(limit, len(sents)))


def encode_words(
    encoder, sentences: list[list[str]], batch_size: int = 32, callback: Callable | None = None
) -> list[np.ndarray]:
    """Frozen features for given word lists (no re-segmentation): a list of (n_i, n_layers, dim) float16 arrays.
    Sentences are batched by length (padding costs LSTM steps) and returned in the given order.
    callback(done, total) after each batch (a job's report: it may raise to stop)."""
    order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))
    out: list = [None] * len(sentences)
    for i in range(0, len(order), batch_size):
        chunk = order[i : i + batch_size]
        toks, texts = [], []
        for j in chunk:
            spans, pos = [], 0
            for w in sentences[j]:
                spans.append((w, pos, pos + len(w)))
                pos += len(w)
            toks.append(spans)
            texts.append("".join(sentences[j]))
        for j, e in zip(chunk, encoder.encode_tokens(toks, texts)):
            out[j] = np.ascontiguousarray(e.layers.transpose(1, 0, 2)).astype(np.float16)  # (T, L, D)
        if callback is not None:
            callback(min(i + batch_size, len(order)), len(order))
    return out


def task_features(encoder, task: str, split: str, limit: int, seed: int = 0, callback: Callable | None = None) -> dict:
    """{"words", "labels", "feats": [(n_i, L, D) float16], "layer_names"} for a sample of a split; cached in memory
    (POS and NER share the People's Daily sentences). callback(done, total) per batch while extracting."""
    words, labels = task_sentences(task, split, limit, seed)
    src = "reviews" if task == "sentiment" else "pd"
    key = _features_key(encoder, task, split, limit, seed)
    if key not in _FEATURES:
        t0 = time.time()
        _FEATURES[key] = _disk_features(encoder, words, src, callback=callback)
        log.info("features %s %s/%s: %d sentences in %.1fs", encoder.name, src, split, len(words), time.time() - t0)
    return {"words": words, "labels": labels, "feats": _FEATURES[key], "layer_names": list(encoder.layer_names)}


def _features_key(encoder, task: str, split: str, limit: int, seed: int) -> tuple:
    where = getattr(encoder, "path", None)  # a loaded checkpoint is keyed by its folder, so POS and NER runs share
    src = "reviews" if task == "sentiment" else "pd"
    return (str(where) if where else id(encoder), getattr(encoder, "name", ""), src, split, limit, seed)


FEATURES_S = 45.0  # about what extracting a live mix's features takes (shipped ELMo, 400 sentences, one CPU thread)


def mix_expected_s(
    encoder, task: str, max_seconds: float, n_train: int = 200, n_test: int = 200, seed: int = 0
) -> float:
    """A guess of a live mix run's length for the job queue's wait estimates before one has finished: its training
    budget `max_seconds` (an upper bound: the epochs often end sooner), plus FEATURES_S when the task's features are
    not in memory yet (the server's warm-up reads them from disk; otherwise the first run extracts them)."""
    ready = all(
        _features_key(encoder, task, split, n, seed) in _FEATURES for split, n in (("train", n_train), ("test", n_test))
    )
    return float(max_seconds) + (0.0 if ready else FEATURES_S)


def _disk_features(encoder, words: list[list[str]], src: str, callback=None) -> list[np.ndarray]:
    """`encode_words(encoder, words)`, kept on disk (ctxlib.cache) for a loaded checkpoint: keyed by the checkpoint's
    files and the sentences themselves, so a retrained model or another sample is encoded afresh."""
    from .. import cache

    where = getattr(encoder, "path", None)
    ck = cache.checkpoint_key(where) if where is not None else None
    k = (
        cache.key(
            "task_features", getattr(encoder, "kind", ""), getattr(encoder, "name", ""), ck, src, cache.key(words)
        )
        if ck
        else None
    )

    def build():
        feats = encode_words(encoder, words, callback=callback)
        flat = np.concatenate(feats) if feats else np.zeros((0, len(encoder.layer_names), encoder.dim), np.float16)
        return {"feats": flat, "lengths": np.array([len(f) for f in feats], dtype=np.int64)}, None

    arrays, _ = cache.cached("task_features", k, build)
    flat, lengths = arrays["feats"], arrays["lengths"]
    if len(lengths) != len(words) or int(lengths.sum()) != len(flat):
        arrays, _ = build()  # an entry that does not fit these sentences: encode (and do not trust the file)
        flat, lengths = arrays["feats"], arrays["lengths"]
    return list(np.split(flat, np.cumsum(lengths)[:-1])) if len(lengths) else []


# -- feature preparation -------------------------------------------------------------------------------------


class Standardizer:
    """Per-layer, per-dimension z-scores fitted on training features (n, L, D)."""

    def __init__(self, x: np.ndarray):
        self.mean = x.mean(0, keepdims=True)
        self.std = x.std(0, keepdims=True) + 1e-5

    def __call__(self, x):
        return ((x - self.mean) / self.std).astype(np.float32)


def flat_features(data: dict, sentence: bool) -> tuple[np.ndarray, list]:
    """Token tasks: all tokens (N, L, D) and their labels; sentiment: mean-pooled sentences (N, L, D)."""
    if sentence:
        return np.stack([f.astype(np.float32).mean(0) for f in data["feats"]]), list(data["labels"])
    return np.concatenate([f.astype(np.float32) for f in data["feats"]]), [y for ys in data["labels"] for y in ys]


def score(task: str, pred: np.ndarray, gold: np.ndarray, classes: list[str]) -> float:
    if task != "ner":
        return float((pred == gold).mean())
    o = classes.index("O") if "O" in classes else -1
    tp = float(((pred == gold) & (gold != o)).sum())
    p, r = tp / max(1, int((pred != o).sum())), tp / max(1, int((gold != o).sum()))
    return 0.0 if p + r == 0 else 2 * p * r / (p + r)


# -- the app's "train the mix live" button ----------------------------------------------------------------------


def train_mix_live(
    encoder,
    task: str,
    l2: float = 0.0,
    n_train: int = 300,
    max_seconds: float = 60,
    callback: Callable | None = None,
    seed: int = 0,
    n_test: int = 150,
    epochs: int = 10,
    features_callback: Callable | None = None,
) -> dict:
    """Train only a ScalarMix and a linear head on frozen features of a small sample (the ELMo page's live mix).

    The features come first (cached in memory per task, so only the first run pays); `max_seconds` then bounds
    the training alone. callback(step, total, weights) reports progress; features_callback(done, total) the
    extraction's, in sentences of both samples (only when they are extracted).
    Returns {mix_weights, gamma, score, history, ...}."""
    check_task(task)
    t0 = time.time()
    sentence = task == "sentiment"

    def features(split: str, limit: int, before: int) -> dict:
        cb = None if features_callback is None else (lambda d, n: features_callback(before + d, n_train + n_test))
        return task_features(encoder, task, split, limit, seed, callback=cb)

    tr, te = features("train", n_train, 0), features("test", n_test, n_train)
    t_train = time.time()
    xtr, ytr = flat_features(tr, sentence)
    xte, yte = flat_features(te, sentence)
    classes = sorted(set(ytr), key=str)
    cid = {c: i for i, c in enumerate(classes)}
    keep = np.array([y in cid for y in yte])
    std = Standardizer(xtr)
    left = max(10.0, max_seconds - (time.time() - t_train))  # a slow (shared) CPU still gets a few real steps
    m, pred, hist = train_probe(
        std(xtr),
        np.array([cid[y] for y in ytr]),
        std(xte[keep]),
        len(classes),
        l2=l2,
        epochs=epochs,
        seed=seed,
        max_seconds=left,
        callback=callback,
        batch=256,
    )
    gold = np.array([cid[y] for y, k in zip(yte, keep) if k])
    return {
        "task": task,
        "metric": METRICS[task],
        "mix_weights": m.mix.weights().detach().cpu().tolist(),
        "gamma": float(m.mix.gamma.detach()),
        "expected_layer": m.mix.expected_layer(),
        "score": score(task, pred, gold, [str(c) for c in classes]),
        "history": hist,
        "l2": l2,
        "layer_names": tr["layer_names"],
        "n_train": len(xtr),
        "n_test": int(keep.sum()),
        "seconds": round(time.time() - t0, 1),
        "feature_seconds": round(t_train - t0, 2),
        "train_seconds": round(time.time() - t_train, 2),
    }


def train_mix_job(
    job, encoder, task: str, l2: float = 0.0, *, n_train: int = 200, n_test: int = 200, max_seconds: float = 20
) -> dict:
    """`train_mix_live` as a ctxlib.jobs work: phase "features" (progress up to 0.4 while they are extracted, only on
    a task's first run), then "train" with one point {step, weights} per step, progress by steps or seconds,
    whichever is further, and the latest weights as the job's partial result {task, l2, step, mix_weights} (kept on
    a cancel). A cancel stops it at the next batch of sentences or the next step."""
    job.report(0.0, phase="features", partial={"task": task, "l2": l2, "step": 0, "mix_weights": None})
    t0: list[float] = []

    def step(s, total, w):
        if not t0:
            t0.extend((time.time(), job.progress))
        done = max(s / max(total, 1), (time.time() - t0[0]) / max(max_seconds, 1e-9))
        job.report(
            t0[1] + (1 - t0[1]) * min(done, 1.0),
            {"step": s, "weights": list(w)},
            phase="train",
            partial={"task": task, "l2": l2, "step": s, "mix_weights": list(w)},
        )

    res = train_mix_live(
        encoder,
        task,
        l2,
        n_train=n_train,
        n_test=n_test,
        max_seconds=max_seconds,
        callback=step,
        features_callback=lambda d, n: job.report(0.4 * d / max(n, 1)),
    )
    return {"task": task, "l2": l2, **res}


# -- the full evaluation --------------------------------------------------------------------------------------


def std_one(f: np.ndarray, std: Standardizer) -> np.ndarray:
    """Standardise one sentence's (T, L, D) features with a Standardizer fitted on (N, L, D)."""
    return ((f - std.mean[0]) / std.std[0]).astype(np.float32)

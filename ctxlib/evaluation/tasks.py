"""Task heads on frozen contextual features, each with its own ScalarMix (Peters et al. 2018, sec. 3.3).

Tasks (People's Daily gold tags and the sentiment reviews):
- "pos": POS tagging (token accuracy);
- "ner": name tagging, nr/ns/nt -> person/place/organisation, other tokens O (token-level F1 over names);
- "sentiment": review polarity (sentence accuracy).

For each task `run_eval` trains, on frozen features of a seeded sample of train-split sentences, and
scores on test-split sentences:
- a linear probe on each single layer (`per_layer_score`) and on the ScalarMix of all layers;
- the task model (a small biLSTM over its own word embeddings) without pretrained features (`baseline_score`),
  with the mixed ELMo vectors as its input (`input_score`, the main `score`), and with them concatenated to
  its hidden layer (`concat_score`) -- the two uses the lecture names;
- the same input use and probe on word2vec vectors (`word2vec_score`, `word2vec_probe_score`).
Each layer's features are standardised on the train sample first, so the mix weights compare layers rather
than their scales.
"""
from __future__ import annotations

import logging
import random
import time
from pathlib import Path
from typing import Callable

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from .. import checkpoint
from ..models.scalar_mix import ScalarMix

log = logging.getLogger(__name__)

TASKS = ("pos", "ner", "sentiment")
NER_MAP = {"nr": "person", "ns": "place", "nt": "organisation"}
METRICS = {"pos": "accuracy", "ner": "name-token F1", "sentiment": "accuracy"}
MAX_LEN = 80  # words per sentence (longer ones are cut)
N_TRAIN, N_TEST = 3000, 1000  # sentences per eval (ELMo's heads and BERT's fine-tuning use the same ones)
_FEATURES: dict = {}  # in-memory cache of extracted features


def _check_task(task: str):
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")


def task_sentences(task: str, split: str, limit: int, seed: int = 0) -> tuple[list[list[str]], list]:
    """A seeded sample of at most `limit` sentences: (word lists, labels). Token tasks give one label list per
    sentence; sentiment gives one int per review."""
    from .. import corpus

    _check_task(task)
    rng = random.Random(f"{task}-{split}-{seed}")
    if task == "sentiment":
        pars = [p for p in corpus.load("reviews", split) if p.words]
        pars = rng.sample(pars, min(limit, len(pars)))
        return [p.words[:MAX_LEN] for p in pars], [int(p.label) for p in pars]
    sents = []
    for p in corpus.load("pd", split):
        for a, b in p.sentences():
            if b - a >= 3:
                sents.append((p.words[a:b][:MAX_LEN], p.tags[a:b][:MAX_LEN]))
    sents = random.Random(f"pd-{split}-{seed}").sample(sents, min(limit, len(sents)))
    if task == "pos":
        return [w for w, _ in sents], [t for _, t in sents]
    return [w for w, _ in sents], [[NER_MAP.get(x, "O") for x in t] for _, t in sents]


def encode_words(encoder, sentences: list[list[str]], batch_size: int = 32) -> list[np.ndarray]:
    """Frozen features for given word lists (no re-segmentation): a list of (n_i, n_layers, dim) float16 arrays.
    Sentences are batched by length (padding costs LSTM steps) and returned in the given order."""
    order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))
    out: list = [None] * len(sentences)
    for i in range(0, len(order), batch_size):
        chunk = order[i:i + batch_size]
        toks, texts = [], []
        for j in chunk:
            spans, pos = [], 0
            for w in sentences[j]:
                spans.append((w, pos, pos + len(w)))
                pos += len(w)
            toks.append(spans)
            texts.append("".join(sentences[j]))
        for j, e in zip(chunk, encoder._encode_tokens(toks, texts)):
            out[j] = np.ascontiguousarray(e.layers.transpose(1, 0, 2)).astype(np.float16)  # (T, L, D)
    return out


def task_features(encoder, task: str, split: str, limit: int, seed: int = 0) -> dict:
    """{"words", "labels", "feats": [(n_i, L, D) float16], "layer_names"} for a sample of a split; cached in memory
    (POS and NER share the People's Daily sentences)."""
    words, labels = task_sentences(task, split, limit, seed)
    src = "reviews" if task == "sentiment" else "pd"
    where = getattr(encoder, "path", None)  # a loaded checkpoint is keyed by its folder, so POS and NER runs share
    key = (str(where) if where else id(encoder), getattr(encoder, "name", ""), src, split, limit, seed)
    if key not in _FEATURES:
        t0 = time.time()
        _FEATURES[key] = encode_words(encoder, words)
        log.info("features %s %s/%s: %d sentences in %.1fs", encoder.name, src, split, len(words), time.time() - t0)
    return {"words": words, "labels": labels, "feats": _FEATURES[key], "layer_names": list(encoder.layer_names)}


# -- feature preparation -------------------------------------------------------------------------------------

class Standardizer:
    """Per-layer, per-dimension z-scores fitted on training features (n, L, D)."""

    def __init__(self, x: np.ndarray):
        self.mean = x.mean(0, keepdims=True)
        self.std = x.std(0, keepdims=True) + 1e-5

    def __call__(self, x):
        return ((x - self.mean) / self.std).astype(np.float32)


def _flat(data: dict, sentence: bool) -> tuple[np.ndarray, list]:
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


# -- heads ------------------------------------------------------------------------------------------------------

class MixProbe(nn.Module):
    """Linear softmax classifier on gamma * sum_j s_j h_j."""

    def __init__(self, n_layers, dim, n_classes, l2=0.0):
        super().__init__()
        self.mix = ScalarMix(n_layers, l2=l2)
        self.out = nn.Linear(dim, n_classes)

    def forward(self, x):  # (N, L, D)
        return self.out(self.mix(x.transpose(0, 1)))


def _param_groups(model, lr):
    mix = [p for n, p in model.named_parameters() if n.startswith("mix.")]
    rest = [p for n, p in model.named_parameters() if not n.startswith("mix.")]
    return [{"params": rest, "lr": lr}, {"params": mix, "lr": 10 * lr}]  # the scalars learn faster (few parameters)


def train_probe(xtr, ytr, xte, n_classes, *, l2=0.0, epochs=10, lr=1e-2, batch=256, seed=0, max_seconds=0.0,
                callback=None, device="cpu"):
    """Train a MixProbe on (N, L, D) features; returns (model, test predictions, history of mix weights)."""
    torch.manual_seed(seed)
    m = MixProbe(xtr.shape[1], xtr.shape[2], n_classes, l2=l2).to(device)
    opt = torch.optim.Adam(_param_groups(m, lr))
    X, Y = torch.from_numpy(xtr).to(device), torch.as_tensor(ytr).to(device)
    g = torch.Generator().manual_seed(seed)
    steps_per_epoch = max(1, (len(X) + batch - 1) // batch)
    total, step, t0, hist = epochs * steps_per_epoch, 0, time.time(), []
    for _ in range(epochs):
        perm = torch.randperm(len(X), generator=g)
        for i in range(0, len(X), batch):
            idx = perm[i:i + batch].to(device)
            loss = F.cross_entropy(m(X[idx]), Y[idx]) + m.mix.penalty()
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            w = m.mix.weights().detach().cpu().tolist()
            hist.append(w)
            if callback is not None:
                callback(step, total, w)
            if max_seconds and time.time() - t0 > max_seconds:
                break
        else:
            continue
        break
    with torch.no_grad():
        m.eval()
        pred = torch.cat([m(torch.from_numpy(xte[i:i + 4096]).to(device)).argmax(-1).cpu() for i in range(0, len(xte), 4096)])
    return m, pred.numpy(), hist


class TaskModel(nn.Module):
    """A small biLSTM task model over its own word embeddings; pretrained features (mixed) enter as its input
    (use="input") or are concatenated to its hidden layer (use="concat"); use="none" is the baseline."""

    def __init__(self, n_words, n_classes, n_layers, feat_dim, use: str, sentence: bool, emb=64, hidden=64, l2=0.0):
        super().__init__()
        if use not in ("none", "input", "concat"):
            raise ValueError(f"use must be none, input or concat, got {use!r}")
        self.use, self.sentence = use, sentence
        self.emb = nn.Embedding(n_words, emb, padding_idx=0)
        self.mix = ScalarMix(n_layers, l2=l2) if use != "none" else None
        self.lstm = nn.LSTM(emb + (feat_dim if use == "input" else 0), hidden, batch_first=True, bidirectional=True)
        self.drop = nn.Dropout(0.3)
        self.out = nn.Linear(2 * hidden + (feat_dim if use == "concat" else 0), n_classes)

    def forward(self, ids, feats, mask):  # (B, T), (B, T, L, D) or None, (B, T)
        x = self.emb(ids)  # (B, T, E)
        e = self.mix(feats.unbind(2)) if self.mix is not None else None  # (B, T, D)
        if self.use == "input":
            x = torch.cat([x, e], -1)
        h, _ = self.lstm(self.drop(x))  # (B, T, 2H)
        if self.use == "concat":
            h = torch.cat([h, e], -1)
        if self.sentence:
            m = mask.unsqueeze(-1).to(h.dtype)
            h = (h * m).sum(1) / m.sum(1).clamp_min(1)  # (B, H') mean over the words
        return self.out(self.drop(h))


def _batches(ids, feats, labels, order, bs, sentence, std, device):
    for i in range(0, len(order), bs):
        sel = order[i:i + bs]
        T = max(len(ids[j]) for j in sel)
        I = np.zeros((len(sel), T), np.int64)
        M = np.zeros((len(sel), T), bool)
        Y = np.full((len(sel),) if sentence else (len(sel), T), -100, np.int64)
        Fe = None
        if feats is not None:
            L, D = feats[sel[0]].shape[1:]
            Fe = np.zeros((len(sel), T, L, D), np.float32)
        for k, j in enumerate(sel):
            n = len(ids[j])
            I[k, :n], M[k, :n] = ids[j], True
            if sentence:
                Y[k] = labels[j]
            else:
                Y[k, :n] = labels[j]
            if Fe is not None:
                Fe[k, :n] = std(feats[j].astype(np.float32))
        yield (torch.from_numpy(I).to(device), None if Fe is None else torch.from_numpy(Fe).to(device),
               torch.from_numpy(M).to(device), torch.from_numpy(Y).to(device))


def _length_batches(ids, bs, rng=None) -> list[list[int]]:
    """Index batches of similar-length sentences (less padding); shuffled batch order when rng is given."""
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    groups = [order[i:i + bs] for i in range(0, len(order), bs)]
    if rng is not None:
        rng.shuffle(groups)
    return groups


def train_task_model(train, test, use, n_classes, word_ids, sentence, *, std=None, epochs=3, lr=5e-3, bs=32, seed=0,
                     device="cpu"):
    """Train a TaskModel on train = (ids, feats, labels); returns (model, test predictions flattened in order)."""
    torch.manual_seed(seed)
    ids, feats, labels = train
    L, D = (feats[0].shape[1:] if feats is not None else (1, 1))
    m = TaskModel(len(word_ids), n_classes, L, D, use, sentence).to(device)
    opt = torch.optim.Adam(_param_groups(m, lr))
    rng = random.Random(seed)
    for _ in range(epochs):
        m.train()
        for grp in _length_batches(ids, bs, rng):
            for I, Fe, M, Y in _batches(ids, feats, labels, grp, len(grp), sentence, std, device):
                logits = m(I, Fe, M)
                loss = F.cross_entropy(logits if sentence else logits.flatten(0, -2), Y if sentence else Y.flatten(),
                                       ignore_index=-100)
                if m.mix is not None:
                    loss = loss + m.mix.penalty()
                opt.zero_grad()
                loss.backward()
                opt.step()
    m.eval()
    tids, tfeats, tlabels = test
    per: list = [None] * len(tids)
    with torch.no_grad():
        for grp in _length_batches(tids, 64):
            for I, Fe, M, Y in _batches(tids, tfeats, tlabels, grp, len(grp), sentence, std, device):
                p = m(I, Fe, M).argmax(-1).cpu().numpy()
                for k, j in enumerate(grp):
                    per[j] = p[k:k + 1] if sentence else p[k, :len(tids[j])]
    return m, np.concatenate(per)


# -- the app's "train the mix live" button ----------------------------------------------------------------------

def train_mix_live(encoder, task: str, l2: float = 0.0, n_train: int = 300, max_seconds: float = 60,
                   callback: Callable | None = None, seed: int = 0, n_test: int = 150, epochs: int = 10) -> dict:
    """Train only a ScalarMix and a linear head on frozen features of a small sample (<= max_seconds in all).

    callback(step, total, weights) reports progress. Returns {mix_weights, gamma, score, history, ...}."""
    _check_task(task)
    t0 = time.time()
    sentence = task == "sentiment"
    tr = task_features(encoder, task, "train", n_train, seed)
    te = task_features(encoder, task, "test", n_test, seed)
    xtr, ytr = _flat(tr, sentence)
    xte, yte = _flat(te, sentence)
    classes = sorted(set(ytr), key=str)
    cid = {c: i for i, c in enumerate(classes)}
    keep = np.array([y in cid for y in yte])
    std = Standardizer(xtr)
    left = max(10.0, max_seconds - (time.time() - t0))  # a slow (shared) CPU still gets a few real steps
    m, pred, hist = train_probe(std(xtr), np.array([cid[y] for y in ytr]), std(xte[keep]), len(classes), l2=l2,
                                epochs=epochs, seed=seed, max_seconds=left, callback=callback, batch=256)
    gold = np.array([cid[y] for y, k in zip(yte, keep) if k])
    return {"task": task, "metric": METRICS[task], "mix_weights": m.mix.weights().detach().cpu().tolist(),
            "gamma": float(m.mix.gamma.detach()), "expected_layer": m.mix.expected_layer(),
            "score": score(task, pred, gold, [str(c) for c in classes]), "history": hist, "l2": l2,
            "layer_names": tr["layer_names"], "n_train": len(xtr), "n_test": int(keep.sum()),
            "seconds": round(time.time() - t0, 1)}


# -- the full evaluation --------------------------------------------------------------------------------------

def run_eval(model_name: str, task: str, device: str = "auto", seed: int = 0, out=None, n_train: int = N_TRAIN,
             n_test: int = N_TEST, epochs: int = 3, probe_epochs: int = 10, word2vec: str | None = "word2vec") -> dict:
    """Train all heads for `task` on frozen features of `model_name` and write eval_<task>.json."""
    from ..encoder import load
    from ..training.trainer import resolve_device

    _check_task(task)
    t0 = time.time()
    dev = resolve_device(device)
    enc = load(model_name)
    sentence = task == "sentiment"
    tr = task_features(enc, task, "train", n_train, seed)
    te = task_features(enc, task, "test", n_test, seed)
    t_feat = time.time() - t0
    classes = sorted({y for ys in ([tr["labels"]] if sentence else tr["labels"]) for y in ys}, key=str)
    cid = {c: i for i, c in enumerate(classes)}
    unk_class = 0
    enc_lab = (lambda ys: cid.get(ys, unk_class)) if sentence else (lambda ys: [cid.get(y, unk_class) for y in ys])
    ytr_s, yte_s = [enc_lab(y) for y in tr["labels"]], [enc_lab(y) for y in te["labels"]]
    xtr, _ = _flat(tr, sentence)
    xte, _ = _flat(te, sentence)
    ytr = np.array(ytr_s if sentence else [y for ys in ytr_s for y in ys])
    yte = np.array(yte_s if sentence else [y for ys in yte_s for y in ys])
    std = Standardizer(xtr)
    sxtr, sxte = std(xtr), std(xte)
    names = [str(c) for c in classes]
    res = {"task": task, "metric": METRICS[task], "model": str(model_name), "layer_names": tr["layer_names"],
           "classes": names, "seed": seed}
    res["majority_score"] = score(task, np.full_like(yte, np.bincount(ytr).argmax()), yte, names)
    # linear probes: each single layer, then the mix of all
    res["per_layer_score"] = []
    for j in range(xtr.shape[1]):
        _, p, _ = train_probe(sxtr[:, j:j + 1], ytr, sxte[:, j:j + 1], len(classes), epochs=probe_epochs, seed=seed, device=dev)
        res["per_layer_score"].append(round(score(task, p, yte, names), 4))
    pm, p, _ = train_probe(sxtr, ytr, sxte, len(classes), epochs=probe_epochs, seed=seed, device=dev)
    res["mix_probe_score"] = round(score(task, p, yte, names), 4)
    res["mix_probe_weights"] = [round(x, 4) for x in pm.mix.weights().tolist()]
    # the task model: its own word embeddings, without / with ELMo as input / ELMo concatenated to its hidden layer
    from ..vocab import Vocab

    wv = Vocab.build(tr["words"], min_count=2, max_size=20000, specials=["<pad>", "<unk>"], unk="<unk>")
    ids_tr = [wv.encode(ws) for ws in tr["words"]]
    ids_te = [wv.encode(ws) for ws in te["words"]]
    kw = dict(epochs=epochs, seed=seed, device=dev)
    tok_std = Standardizer(np.concatenate([f.astype(np.float32) for f in tr["feats"][:500]]))  # token-level scales
    layer_std = lambda f: std_one(f, tok_std)
    _, p = train_task_model((ids_tr, None, ytr_s), (ids_te, None, yte_s), "none", len(classes), wv.itos, sentence, **kw)
    res["baseline_score"] = round(score(task, p, yte, names), 4)
    for use in ("input", "concat"):
        m, p = train_task_model((ids_tr, tr["feats"], ytr_s), (ids_te, te["feats"], yte_s), use, len(classes), wv.itos,
                                sentence, std=layer_std, **kw)
        res[f"{use}_score"] = round(score(task, p, yte, names), 4)
        res[f"{use}_mix_weights"] = [round(x, 4) for x in m.mix.weights().tolist()]
        res[f"{use}_gamma"] = round(float(m.mix.gamma.detach()), 4)
    res["score"] = res["input_score"]
    res["mix_weights"] = res["input_mix_weights"]
    res["gamma"] = res["input_gamma"]
    res["expected_layer"] = round(sum(j * s for j, s in enumerate(res["mix_weights"])), 4)
    # word2vec baseline: the same probe and the same input use on word2vec vectors
    res["word2vec_score"] = res["word2vec_probe_score"] = None
    if word2vec:
        try:
            w2v = load(word2vec)
        except checkpoint.CheckpointError as e:
            res["word2vec_note"] = f"word2vec checkpoint missing, baseline skipped ({e})"
        else:
            wtr = {**tr, "feats": encode_words(w2v, tr["words"])}
            wte = {**te, "feats": encode_words(w2v, te["words"])}
            wxtr, _ = _flat(wtr, sentence)
            wxte, _ = _flat(wte, sentence)
            wstd = Standardizer(wxtr)
            wtok = Standardizer(np.concatenate([f.astype(np.float32) for f in wtr["feats"][:500]]))
            _, p, _ = train_probe(wstd(wxtr), ytr, wstd(wxte), len(classes), epochs=probe_epochs, seed=seed, device=dev)
            res["word2vec_probe_score"] = round(score(task, p, yte, names), 4)
            _, p = train_task_model((ids_tr, wtr["feats"], ytr_s), (ids_te, wte["feats"], yte_s), "input", len(classes),
                                    wv.itos, sentence, std=lambda f: std_one(f, wtok), **kw)
            res["word2vec_score"] = round(score(task, p, yte, names), 4)
            if not sentence:
                res["word2vec_oov_rate"] = round(float((np.abs(wxte).sum(axis=(1, 2)) == 0).mean()), 4)
    res.update({"n_train": len(tr["words"]), "n_test": len(te["words"]), "n_train_items": int(len(ytr)),
                "n_test_items": int(len(yte)), "epochs": epochs, "probe_epochs": probe_epochs,
                "feature_seconds": round(t_feat, 1), "seconds": round(time.time() - t0, 1), "device": str(dev),
                "command": f"python -m ctxlib eval {model_name} --task {task} --seed {seed}"})
    path = Path(out) if out else checkpoint.resolve(model_name) / f"eval_{task}.json"
    checkpoint.atomic_write_json(path, res)
    log.info("%s %s: score %.4f per layer %s mix %s (%.0fs)", model_name, task, res["score"], res["per_layer_score"],
             res["mix_weights"], res["seconds"])
    return res


def std_one(f: np.ndarray, std: Standardizer) -> np.ndarray:
    """Standardise one sentence's (T, L, D) features with a Standardizer fitted on (N, L, D)."""
    return ((f - std.mean[0]) / std.std[0]).astype(np.float32)

"""`run_eval`: the full task evaluation of one model (`python -m ctxlib eval MODEL --task pos|ner|sentiment`), as
evaluation/tasks.py describes it: linear probes on each layer and on the ScalarMix, the task model without, with and
beside the features, and the word2vec baseline, written to eval_<task>.json. The task samples, features and the
live mix are in tasks.py; the heads in heads.py.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np

from .. import checkpoint
from ..analysis import expected_layer
from .heads import train_probe, train_task_model
from .tasks import (
    METRICS,
    N_TEST,
    N_TRAIN,
    TASK_EPOCHS,
    Standardizer,
    check_task,
    encode_words,
    flat_features,
    score,
    std_one,
    task_features,
)

log = logging.getLogger(__name__)


class _Labels(NamedTuple):
    """The gold labels of a task's train and test sample: per sentence (as the task model takes them) and flat."""

    train: list  # per sentence: a class id (sentiment) or a list of them (tagging)
    test: list
    flat_train: np.ndarray  # one per item (sentence or token)
    flat_test: np.ndarray
    names: list[str]  # the class names, by id


def _labels(tr: dict, te: dict, sentence: bool) -> _Labels:
    """Class ids from the train sample's classes; a test label never seen in training gets class 0."""
    classes = sorted({y for ys in ([tr["labels"]] if sentence else tr["labels"]) for y in ys}, key=str)
    cid = {c: i for i, c in enumerate(classes)}
    unk_class = 0
    enc_lab = (lambda ys: cid.get(ys, unk_class)) if sentence else (lambda ys: [cid.get(y, unk_class) for y in ys])
    ytr_s, yte_s = [enc_lab(y) for y in tr["labels"]], [enc_lab(y) for y in te["labels"]]
    ytr = np.array(ytr_s if sentence else [y for ys in ytr_s for y in ys])
    yte = np.array(yte_s if sentence else [y for ys in yte_s for y in ys])
    return _Labels(ytr_s, yte_s, ytr, yte, [str(c) for c in classes])


def _probe_scores(task: str, sxtr: np.ndarray, sxte: np.ndarray, y: _Labels, probe_epochs: int, seed: int, dev) -> dict:
    """Linear probes on the standardised features: each single layer, then the mix of all."""
    n, res = len(y.names), {"per_layer_score": []}
    for j in range(sxtr.shape[1]):
        _, p, _ = train_probe(
            sxtr[:, j : j + 1], y.flat_train, sxte[:, j : j + 1], n, epochs=probe_epochs, seed=seed, device=dev
        )
        res["per_layer_score"].append(round(score(task, p, y.flat_test, y.names), 4))
    pm, p, _ = train_probe(sxtr, y.flat_train, sxte, n, epochs=probe_epochs, seed=seed, device=dev)
    res["mix_probe_score"] = round(score(task, p, y.flat_test, y.names), 4)
    res["mix_probe_weights"] = [round(x, 4) for x in pm.mix.weights().tolist()]
    return res


def _task_model_scores(task: str, tr: dict, te: dict, y: _Labels, ids: tuple, itos, sentence: bool, kw: dict) -> dict:
    """The task model on its own word embeddings: without the features, with their mix as its input, and with it
    concatenated to its hidden layer."""
    ids_tr, ids_te = ids
    tok_std = Standardizer(np.concatenate([f.astype(np.float32) for f in tr["feats"][:500]]))  # token-level scales
    layer_std = lambda f: std_one(f, tok_std)
    res = {}
    _, p = train_task_model((ids_tr, None, y.train), (ids_te, None, y.test), "none", len(y.names), itos, sentence, **kw)
    res["baseline_score"] = round(score(task, p, y.flat_test, y.names), 4)
    for use in ("input", "concat"):
        m, p = train_task_model(
            (ids_tr, tr["feats"], y.train),
            (ids_te, te["feats"], y.test),
            use,
            len(y.names),
            itos,
            sentence,
            std=layer_std,
            **kw,
        )
        res[f"{use}_score"] = round(score(task, p, y.flat_test, y.names), 4)
        res[f"{use}_mix_weights"] = [round(x, 4) for x in m.mix.weights().tolist()]
        res[f"{use}_gamma"] = round(float(m.mix.gamma.detach()), 4)
    return res


def _word2vec_scores(
    task: str,
    w2v,
    tr: dict,
    te: dict,
    y: _Labels,
    ids: tuple,
    itos,
    sentence: bool,
    probe_epochs: int,
    seed: int,
    kw: dict,
) -> dict:
    """The word2vec baseline: the same probe and the same input use on word2vec vectors."""
    ids_tr, ids_te = ids
    wtr = {**tr, "feats": encode_words(w2v, tr["words"])}
    wte = {**te, "feats": encode_words(w2v, te["words"])}
    wxtr, _ = flat_features(wtr, sentence)
    wxte, _ = flat_features(wte, sentence)
    wstd = Standardizer(wxtr)
    wtok = Standardizer(np.concatenate([f.astype(np.float32) for f in wtr["feats"][:500]]))
    res = {}
    _, p, _ = train_probe(
        wstd(wxtr), y.flat_train, wstd(wxte), len(y.names), epochs=probe_epochs, seed=seed, device=kw["device"]
    )
    res["word2vec_probe_score"] = round(score(task, p, y.flat_test, y.names), 4)
    _, p = train_task_model(
        (ids_tr, wtr["feats"], y.train),
        (ids_te, wte["feats"], y.test),
        "input",
        len(y.names),
        itos,
        sentence,
        std=lambda f: std_one(f, wtok),
        **kw,
    )
    res["word2vec_score"] = round(score(task, p, y.flat_test, y.names), 4)
    if not sentence:
        res["word2vec_oov_rate"] = round(float((np.abs(wxte).sum(axis=(1, 2)) == 0).mean()), 4)
    return res


def run_eval(
    model_name: str,
    task: str,
    device: str = "auto",
    seed: int = 0,
    out=None,
    n_train: int = N_TRAIN,
    n_test: int = N_TEST,
    epochs: int = TASK_EPOCHS,
    probe_epochs: int = 10,
    word2vec: str | None = "word2vec",
) -> dict:
    """Train all heads for `task` on frozen features of `model_name` and write eval_<task>.json."""
    from ..device import resolve_device
    from ..encoder import load
    from ..vocab import Vocab

    check_task(task)
    t0 = time.time()
    dev = resolve_device(device)
    enc = load(model_name)
    sentence = task == "sentiment"
    tr = task_features(enc, task, "train", n_train, seed)
    te = task_features(enc, task, "test", n_test, seed)
    t_feat = time.time() - t0
    y = _labels(tr, te, sentence)
    xtr, _ = flat_features(tr, sentence)
    xte, _ = flat_features(te, sentence)
    std = Standardizer(xtr)
    res = {
        "task": task,
        "metric": METRICS[task],
        "model": str(model_name),
        "layer_names": tr["layer_names"],
        "classes": y.names,
        "seed": seed,
    }
    res["majority_score"] = score(
        task, np.full_like(y.flat_test, np.bincount(y.flat_train).argmax()), y.flat_test, y.names
    )
    res.update(_probe_scores(task, std(xtr), std(xte), y, probe_epochs, seed, dev))
    wv = Vocab.build(tr["words"], min_count=2, max_size=20000, specials=["<pad>", "<unk>"], unk="<unk>")
    ids = ([wv.encode(ws) for ws in tr["words"]], [wv.encode(ws) for ws in te["words"]])
    kw = dict(epochs=epochs, seed=seed, device=dev)
    res.update(_task_model_scores(task, tr, te, y, ids, wv.itos, sentence, kw))
    res["score"] = res["input_score"]
    res["mix_weights"] = res["input_mix_weights"]
    res["gamma"] = res["input_gamma"]
    res["expected_layer"] = round(expected_layer(res["mix_weights"]), 4)
    res["word2vec_score"] = res["word2vec_probe_score"] = None
    if word2vec:
        try:
            w2v = load(word2vec)
        except checkpoint.CheckpointError as e:
            res["word2vec_note"] = f"word2vec checkpoint missing, baseline skipped ({e})"
        else:
            res.update(_word2vec_scores(task, w2v, tr, te, y, ids, wv.itos, sentence, probe_epochs, seed, kw))
    res.update(
        {
            "n_train": len(tr["words"]),
            "n_test": len(te["words"]),
            "n_train_items": int(len(y.flat_train)),
            "n_test_items": int(len(y.flat_test)),
            "epochs": epochs,
            "probe_epochs": probe_epochs,
            "feature_seconds": round(t_feat, 1),
            "seconds": round(time.time() - t0, 1),
            "device": str(dev),
            "command": f"python -m ctxlib eval {model_name} --task {task} --seed {seed}",
        }
    )
    path = Path(out) if out else checkpoint.resolve(model_name) / f"eval_{task}.json"
    checkpoint.atomic_write_json(path, res)
    log.info(
        "%s %s: score %.4f per layer %s mix %s (%.0fs)",
        model_name,
        task,
        res["score"],
        res["per_layer_score"],
        res["mix_weights"],
        res["seconds"],
    )
    return res

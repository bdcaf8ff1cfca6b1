"""BERT on review sentiment (`python -m ctxlib eval bert --task sentiment`), both ways the lecture shows:
fine-tuning (finetune.fine_tune with the default recipe; all weights trained; several seeds) and feature-based (the
frozen layers, mixed, as the input of ELMo's task model); plus frozen per-layer probes and the word2vec baseline on
the same reviews. `run_eval` returns a `SentimentEval`, whose `to_json()` is eval_sentiment.json (results.py and
the pages read it).
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import checkpoint
from ..models.bert_encoder import BertEncoder
from .finetune import BATCH, DROPOUT, EPOCHS, HEAD, LLRD, LR, SCORE_FROM, TRUNCATE, bert_features, fine_tune, predict

log = logging.getLogger(__name__)

HEAD_NAMES = {
    "cls": "tanh pooler on [CLS] + linear",
    "cls_fresh": "fresh tanh pooler on [CLS] + linear",
    "mean": "mean of the character vectors + linear",
    "mix": "ScalarMix of all layers, mean of the characters + linear",
}


def _sem(xs) -> float | None:
    return round(float(np.std(xs, ddof=1) / math.sqrt(len(xs))), 4) if len(xs) > 1 else None


def _r4(xs) -> list[float]:
    return [round(x, 4) for x in xs]


@dataclass
class SentimentEval:
    """What `run_eval` measured so far; `to_json()` is eval_sentiment.json (results.py and the pages read it)."""

    model: str  # the checkpoint's name
    command_model: str  # the model as the command named it
    seed: int
    recipe: dict  # the fine-tuning recipe: head, epochs, lr, batch, dropout, llrd, truncate, bf16
    finetune_seeds: int
    feature_seeds: int
    n_train: int
    n_test: int
    layer_names: list
    started: float  # time.time() at the start
    per_layer_score: list = field(default_factory=list)  # frozen per-layer probes
    word2vec_score: float | None = None
    input_scores: list = field(default_factory=list)  # feature-based, one per seed
    baseline_scores: list = field(default_factory=list)  # the task model alone, one per seed
    mix: tuple | None = None  # (ScalarMix weights, gamma) of the first feature-based seed
    finetune_scores: list = field(default_factory=list)  # one per fine-tuning seed

    def ways(self) -> dict:
        ft, feat = self.finetune_scores, self.input_scores
        return {"finetune": float(np.mean(ft)) if ft else None, "features": float(np.mean(feat)) if feat else None}

    def score_from(self) -> str | None:
        """SCORE_FROM when it has a figure, else the first way that has one."""
        ways = self.ways()
        return SCORE_FROM if ways.get(SCORE_FROM) is not None else next((w for w in ways if ways[w] is not None), None)

    def method(self, key: str | None) -> str:
        r = self.recipe
        dropout = f", encoder dropout {r['dropout']}" if r["dropout"] is not None else ""
        llrd = f", layer-wise lr decay {r['llrd']}" if r["llrd"] != 1 else ""
        bf16 = ", bf16 autocast" if r["bf16"] else ""
        ft_method = (
            f"fine-tune all weights, head {r['head']} ({HEAD_NAMES[r['head']]}), {r['epochs']} epoch(s), "
            f"lr {r['lr']}, batch {r['batch']}{dropout}{llrd}, truncation {r['truncate']}, "
            f"mean over {self.finetune_seeds} seed(s){bf16}"
        )
        return (
            f"finetune_score: {ft_method}; input_score: frozen BERT, a ScalarMix of its layers (each word "
            "the mean of its characters; long reviews read in overlapping windows) as the input of the task "
            "model ELMo's eval uses, mean over "
            f"{self.feature_seeds} seed(s); baseline_score: that task model alone, same seeds; score: "
            f"{key} (score_from; the way chosen on the valid split); per_layer_score: frozen logistic probe on "
            "mean-pooled character vectors; word2vec_score: the same probe on mean word2vec vectors (ELMo's "
            "eval_sentiment.json also has word2vec as the task model's input, on the same reviews)"
        )

    def to_json(self) -> dict:
        from .. import analysis

        ft, feat, base, mix, r = self.finetune_scores, self.input_scores, self.baseline_scores, self.mix, self.recipe
        ways, best = self.ways(), self.score_from()
        key = {"finetune": "finetune_score", "features": "input_score"}.get(best)
        chosen = {"finetune": ft, "features": feat}.get(best, [])
        return {
            "task": "sentiment",
            "model": self.model,
            "kind": "bert",
            "metric": "accuracy",
            "finetune_recipe": {"head": r["head"], "epochs": r["epochs"], "lr": r["lr"], "batch": r["batch"]},
            "score": round(ways[best], 4) if best else None,
            "score_from": best,
            "score_per_seed": _r4(chosen),
            "score_sem": _sem(chosen),
            "finetune_score": round(ways["finetune"], 4) if ft else None,
            "finetune_score_per_seed": _r4(ft),
            "finetune_score_sem": _sem(ft),
            "input_score": round(ways["features"], 4) if feat else None,
            "input_score_per_seed": _r4(feat),
            "input_score_sem": _sem(feat),
            "input_mix_weights": mix[0] if mix else None,
            "input_gamma": mix[1] if mix else None,
            "baseline_score": round(float(np.mean(base)), 4) if base else None,
            "baseline_score_per_seed": _r4(base),
            "per_layer_score": self.per_layer_score,
            "layer_names": self.layer_names,
            "mix_weights": mix[0] if mix else None,
            "gamma": mix[1] if mix else None,
            "expected_layer": round(analysis.expected_layer(mix[0]), 4) if mix else None,
            "word2vec_score": self.word2vec_score,
            "n_train": self.n_train,
            "n_test": self.n_test,
            "seconds": round(time.time() - self.started, 1),
            "complete": len(ft) == self.finetune_seeds,
            "method": self.method(key),
            "command": f"python -m ctxlib eval {self.command_model} --task sentiment --seed {self.seed}",
            "seed": self.seed,
        }

    def write(self, path: Path) -> dict:
        """Write eval_sentiment.json at `path`; what it wrote."""
        result = self.to_json()
        checkpoint.atomic_write_json(path, result)
        log.info("wrote %s", path)
        return result


def run_eval(
    model_name,
    task: str = "sentiment",
    device: str = "auto",
    seed: int = 0,
    out=None,
    max_train: int | None = None,
    max_test: int | None = None,
    epochs: int = EPOCHS,
    lr: float = LR,
    batch: int = BATCH,
    amp: bool = True,
    head: str = HEAD,
    dropout: float | None = DROPOUT,
    llrd: float = LLRD,
    truncate: str = TRUNCATE,
    finetune_seeds: int = 3,
    feature_seeds: int = 3,
) -> SentimentEval:
    """BERT on review sentiment (corpus reviews, ELMo's train/test samples), both ways the lecture shows:
    - fine-tuning all weights with a head (the default recipe above), mean over `finetune_seeds` seeds;
    - feature-based: the frozen layers, mixed by a learned ScalarMix, as the input of the same task model ELMo's
      eval uses (heads.train_task_model), mean over `feature_seeds` seeds, beside that task model alone;
    plus frozen per-layer logistic probes on mean-pooled features and the same probe on word2vec vectors.
    `score` is SCORE_FROM's mean (the way that did better on the valid split; never chosen on the test
    reviews); both are in the file. Writes eval_sentiment.json in the checkpoint folder, or `out`, once the
    feature-based figures are in and again after each fine-tuning seed; returns the record (`.to_json()`)."""
    from ..device import fast_bf16, resolve_device
    from ..encoder import load
    from . import tasks

    if task != "sentiment":
        raise ValueError(f"BERT evaluation supports task 'sentiment' only, got {task!r}")
    t0 = time.time()
    dev = resolve_device(device)
    use_bf16 = amp and fast_bf16(dev)  # emulated bf16 on an AVX2-only CPU is far slower than fp32
    enc = load(model_name)
    if not isinstance(enc, BertEncoder):
        raise ValueError(f"{model_name} is not a BERT checkpoint")
    train, test = _reviews(seed, max_train, max_test)
    rec = SentimentEval(
        enc.name,
        str(model_name),
        seed,
        dict(
            head=head, epochs=epochs, lr=lr, batch=batch, dropout=dropout, llrd=llrd, truncate=truncate, bf16=use_bf16
        ),
        finetune_seeds,
        feature_seeds,
        len(train[1]),
        len(test[1]),
        enc.layer_names,
        t0,
    )
    ftr, fte = _frozen_probes(rec, enc, train, test)
    _feature_based(rec, train, test, ftr, fte, dev, tasks.TASK_EPOCHS)  # as long as ELMo's eval trains it
    path = Path(out) if out else Path(enc.path) / "eval_sentiment.json"
    rec.write(path)  # the feature-based figures first: a slow CPU may take an hour per fine-tuning seed
    # fine-tuning all weights with the default recipe, several seeds: on 3,000 reviews one run's accuracy moves
    # by 1-2 points with the seed alone (bench/bert_finetune_dev.py), as much as the gaps between the models
    (_, xtr, ytr), (_, xte, yte) = train, test
    for k in range(finetune_seeds):
        clf = fine_tune(
            enc.model,
            enc.tokenizer,
            xtr,
            ytr,
            epochs=epochs,
            lr=lr,
            batch=batch,
            seed=seed + k,
            head=head,
            dropout=dropout,
            llrd=llrd,
            truncate=truncate,
            device=str(dev),
            bf16=use_bf16,
        )
        rec.finetune_scores.append(float((predict(clf, enc.tokenizer, xte, device=str(dev)) == yte).mean()))
        log.info("fine-tuning seed %d: %.4f", seed + k, rec.finetune_scores[-1])
        rec.write(path)
    return rec


def _reviews(seed: int, max_train: int | None, max_test: int | None) -> tuple[tuple, tuple]:
    """ELMo's sampler and default sizes (ctxlib.evaluation.tasks): exactly the reviews that
    `python -m ctxlib eval elmo --task sentiment` trains and scores on, as (words, texts, labels) for train and test."""
    from . import tasks

    max_train = tasks.N_TRAIN if max_train is None else max_train
    max_test = tasks.N_TEST if max_test is None else max_test
    words_tr, lab_tr = tasks.task_sentences("sentiment", "train", max_train, seed)
    words_te, lab_te = tasks.task_sentences("sentiment", "test", max_test, seed)
    return (
        (words_tr, ["".join(w) for w in words_tr], np.array(lab_tr)),
        (words_te, ["".join(w) for w in words_te], np.array(lab_te)),
    )


def _frozen_probes(rec: SentimentEval, enc, train: tuple, test: tuple) -> tuple[list, list]:
    """Frozen features: per-layer probes on mean-pooled characters and the word2vec baseline into `rec`; the word
    vectors the task model reads (train, test)."""
    from .. import analysis
    from ..encoder import load

    (words_tr, xtr, ytr), (words_te, xte, yte) = train, test
    ftr, _, mtr = bert_features(enc, words_tr)
    fte, _, mte = bert_features(enc, words_te)
    rec.per_layer_score = [
        round(analysis.probe_accuracy(mtr[:, j], ytr, mte[:, j], yte), 4) for j in range(mtr.shape[1])
    ]
    log.info("frozen per-layer probes %s (%.0f s)", rec.per_layer_score, time.time() - rec.started)
    try:
        wenc = load("word2vec")

        def wmean(texts):
            return np.stack(
                [e.layers[0].mean(0) if len(e.tokens) else np.zeros(wenc.dim, np.float32) for e in wenc.encode(texts)]
            )

        rec.word2vec_score = round(analysis.probe_accuracy(wmean(xtr), ytr, wmean(xte), yte), 4)
    except Exception as e:  # no shipped word2vec, or it cannot be read: report null, say why in the log
        log.warning("word2vec baseline skipped: %s", e)
    return ftr, fte


def _feature_based(rec: SentimentEval, train: tuple, test: tuple, ftr: list, fte: list, dev, task_epochs: int) -> None:
    """ELMo's eval head (a biLSTM over its own word embeddings) with BERT's ScalarMix as its input, and that task
    model alone, for each feature seed, into `rec`, for `task_epochs` epochs."""
    from ..vocab import Vocab
    from . import tasks
    from .heads import train_task_model

    (words_tr, _, ytr), (words_te, _, yte) = train, test
    wv = Vocab.build(words_tr, min_count=2, max_size=20000, specials=["<pad>", "<unk>"], unk="<unk>")
    ids_tr, ids_te = [wv.encode(w) for w in words_tr], [wv.encode(w) for w in words_te]
    tok_std = tasks.Standardizer(np.concatenate([f.astype(np.float32) for f in ftr[:500]]))
    for k in range(rec.feature_seeds):
        m, p = train_task_model(
            (ids_tr, ftr, list(ytr)),
            (ids_te, fte, list(yte)),
            "input",
            2,
            wv.itos,
            True,
            std=lambda f: tasks.std_one(f, tok_std),
            epochs=task_epochs,
            seed=rec.seed + k,
            device=dev,
        )
        rec.input_scores.append(float((np.asarray(p) == yte).mean()))
        rec.mix = rec.mix or ([round(x, 4) for x in m.mix.weights().tolist()], round(float(m.mix.gamma.detach()), 4))
        _, p = train_task_model(
            (ids_tr, None, list(ytr)),
            (ids_te, None, list(yte)),
            "none",
            2,
            wv.itos,
            True,
            epochs=task_epochs,
            seed=rec.seed + k,
            device=dev,
        )
        rec.baseline_scores.append(float((np.asarray(p) == yte).mean()))
        log.info(
            "feature-based seed %d: %.4f (task model alone %.4f)",
            rec.seed + k,
            rec.input_scores[-1],
            rec.baseline_scores[-1],
        )

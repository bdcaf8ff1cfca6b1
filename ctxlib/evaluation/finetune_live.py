"""The fine-tuning page's live run: BERT fine-tuned on a small sample of the sentiment reviews (finetune.fine_tune,
all weights, tanh pooler on [CLS] + linear head), scored on a fixed held-out sample, beside frozen-feature baselines
on the SAME reviews: a logistic probe on BERT's frozen top-layer [CLS] vector, on ELMo's vectors and on word2vec's.

The reviews are ELMo's sentiment samples (tasks.task_sentences, seeded), each cut to `max_chars` characters (at a
word boundary, so the word-level models and BERT read the same text). `run(job, ...)` is the work of a background
job (ctxlib.jobs): it reports progress and each step's loss and batch accuracy, and stops when the job is cancelled.
"""

from __future__ import annotations

import logging
import time

import numpy as np

from . import finetune, tasks

log = logging.getLogger(__name__)

N_TRAIN, N_TEST, MAX_CHARS = 300, 200, 64  # about a minute on one CPU thread with the shipped BERT
# One epoch of 300 reviews is only ~38 steps, so: small batches and a higher rate than the full evaluation's 1e-4
# (on this sample, batch 16 at 1e-4 stayed at 0.535 test accuracy, batch 8 at 3e-4 reached 0.67; one run each)
BATCH, LR = 8, 3e-4
TEST_SEED = 0  # the held-out reviews never change with the run's seed
_BASELINES: dict = {}  # (models, sample) -> the frozen baselines' accuracies; they do not change between runs


def cut_words(words: list[str], max_chars: int) -> list[str]:
    """The leading words whose characters fit in `max_chars` (at least the first word, itself cut)."""
    out, n = [], 0
    for w in words:
        if n + len(w) > max_chars:
            break
        out.append(w)
        n += len(w)
    return (out or [words[0][:max_chars]]) if words else []


def sample(split: str, n: int, max_chars: int = MAX_CHARS, seed: int = 0) -> tuple[list[list[str]], np.ndarray]:
    """(word lists cut to `max_chars` characters, labels 1 positive / 0 negative) of n seeded reviews of a split."""
    words, labels = tasks.task_sentences("sentiment", split, n, seed)
    return [cut_words(w, max_chars) for w in words], np.asarray(labels, np.int64)


def _report(job, progress: float, point=None, phase=None) -> None:
    if job is not None:
        job.report(progress, point, phase)


def frozen_baselines(bert, elmo, word2vec, train: tuple, test: tuple) -> dict:
    """Logistic-probe accuracies on frozen features of the same reviews: BERT's top-layer [CLS] vector; ELMo's 2L+1
    layers, each averaged over the review's words, concatenated; word2vec's mean word vector (unseen words count as
    zero vectors). A model that is None gets None."""
    from ..analysis import probe_accuracy
    from ..tokens import char_tokens

    (wtr, ytr), (wte, yte) = train, test

    def bert_cls(ws):
        texts = ["".join(w) for w in ws]
        out = []
        for i in range(0, len(texts), 64):
            sub = texts[i : i + 64]
            out += [e.layers[-1, 0] for e in bert.encode_tokens([char_tokens(t) for t in sub], sub, need_weights=False)]
        return np.stack(out)  # (n, D): [CLS] is token 0

    def pooled(enc, ws):
        return np.stack([f.astype(np.float32).mean(0).reshape(-1) for f in tasks.encode_words(enc, ws)])  # (n, L*D)

    res = {"bert_cls": None, "elmo": None, "word2vec": None}
    if bert is not None:
        res["bert_cls"] = probe_accuracy(bert_cls(wtr), ytr, bert_cls(wte), yte)
    for name, enc in (("elmo", elmo), ("word2vec", word2vec)):
        if enc is not None:
            res[name] = probe_accuracy(pooled(enc, wtr), ytr, pooled(enc, wte), yte)
    return res


def run(
    job,
    bert,
    elmo=None,
    word2vec=None,
    *,
    n_train: int = N_TRAIN,
    n_test: int = N_TEST,
    max_chars: int = MAX_CHARS,
    epochs: int = 1,
    lr: float = LR,
    batch: int = BATCH,
    seed: int = 0,
    n_examples: int = 8,
) -> dict:
    """Fine-tune `bert` (a BertEncoder; left unchanged) on n_train reviews and score it on n_test held-out reviews,
    with the frozen baselines on the same reviews. `job` (a ctxlib.jobs.Job or None) gets progress, one point per
    step {step, loss, acc}, and phases "data", "finetune", "test", "baselines".

    Returns {accuracy, baselines, history, examples: [(text, gold, p_positive)], n_train, n_test, seconds (wall),
    cpu_seconds (the job thread's CPU time: the wall time on an idle core), ...}."""
    t0, c0 = time.time(), time.thread_time()  # wall and this thread's CPU time (all of it on one torch thread)
    _report(job, 0.0, phase="data")
    train = sample("train", n_train, max_chars, seed)
    test = sample("test", n_test, max_chars, TEST_SEED)
    xtr, xte = ["".join(w) for w in train[0]], ["".join(w) for w in test[0]]
    _report(job, 0.05, phase="finetune")
    history = []

    def step(k, total, loss, acc):
        history.append({"step": k, "loss": loss, "acc": acc})
        _report(job, 0.05 + 0.75 * min(1.0, k / max(total, 1)), {"step": k, "total": total, "loss": loss, "acc": acc})

    t_ft, c_ft = time.time(), time.thread_time()
    clf = finetune.fine_tune(
        bert.model,
        bert.tokenizer,
        xtr,
        train[1],
        epochs=epochs,
        lr=lr,
        batch=batch,
        seed=seed,
        head="cls",
        callback=step,
    )  # the head the page draws (the eval's recipe is finetune.HEAD)
    ft_seconds, ft_cpu = time.time() - t_ft, time.thread_time() - c_ft
    _report(job, 0.8, phase="test")
    pred = finetune.predict(clf, bert.tokenizer, xte)
    accuracy = float((pred == test[1]).mean())
    examples = _examples(clf, bert.tokenizer, xte[:n_examples], test[1][:n_examples])
    del clf
    _report(job, 0.85, phase="baselines")
    key = (id(bert), id(elmo), id(word2vec), n_train, n_test, max_chars, seed)
    if key not in _BASELINES:
        _BASELINES[key] = frozen_baselines(bert, elmo, word2vec, train, test)
    majority = float(max(test[1].mean(), 1 - test[1].mean()))
    log.info("live fine-tuning: accuracy %.3f, baselines %s (%.0f s)", accuracy, _BASELINES[key], time.time() - t0)
    return {
        "accuracy": accuracy,
        "baselines": dict(_BASELINES[key]),
        "majority": majority,
        "history": history,
        "examples": examples,
        "n_train": len(xtr),
        "n_test": len(xte),
        "max_chars": max_chars,
        "epochs": epochs,
        "lr": lr,
        "batch": batch,
        "seed": seed,
        "finetune_seconds": round(ft_seconds, 1),
        "finetune_cpu_seconds": round(ft_cpu, 1),
        "seconds": round(time.time() - t0, 1),
        "cpu_seconds": round(time.thread_time() - c0, 1),
    }


def _examples(clf, tok, texts: list[str], gold) -> list[tuple[str, int, float]]:
    """(text, gold label, the fine-tuned head's probability of "positive") for a few test reviews."""
    import torch

    out = []
    with torch.no_grad():
        for t, g in zip(texts, gold):
            ids = finetune.batch_ids(tok, [t], clf.bert.cfg.max_len)
            p = torch.softmax(clf(ids, torch.zeros_like(ids)).float(), -1)[0, 1]
            out.append((t, int(g), round(float(p), 4)))
    return out


def finetune_recipe(bert_eval) -> dict | None:
    """The fine-tuning recipe a BERT eval file names ({head, epochs, lr, batch}); None for files written before it
    was recorded, or a malformed entry."""
    r = getattr(bert_eval, "extra", {}).get("finetune_recipe") if bert_eval is not None else None
    if not isinstance(r, dict) or r.get("head") not in finetune.HEADS:
        return None
    try:
        return {**r, "epochs": int(r["epochs"])}
    except (KeyError, TypeError, ValueError):
        return None


def full_size_rows(bert_eval, elmo_eval) -> list[tuple[str, float, str]]:
    """The full-size figures (`python -m ctxlib eval ... --task sentiment`, 3,000 / 1,000 reviews) to show beside a
    live run, from the two checkpoints' eval_sentiment.json (records.EvalResult, or None when a file is missing):
    [(key, accuracy, file)], keys bert_finetuned, bert_input (frozen BERT as the task model's input, ScalarMix),
    bert_probe (the best frozen layer), elmo_input, elmo_concat,
    elmo_probe, w2v_input, w2v_probe; a figure the file does not have is left out."""
    rows = []
    if bert_eval is not None:
        x = bert_eval.extra
        # files before the feature-based figure have only `score` (fine-tuning); newer ones name each way
        tuned = (
            x["finetune_score"]
            if "finetune_score" in x
            else (bert_eval.score if x.get("score_from") in (None, "finetune") else None)
        )
        rows.append(("bert_finetuned", tuned, "checkpoints/bert/eval_sentiment.json"))
        rows.append(("bert_input", bert_eval.input_score, "checkpoints/bert/eval_sentiment.json"))
        if bert_eval.per_layer_score:
            rows.append(("bert_probe", max(bert_eval.per_layer_score), "checkpoints/bert/eval_sentiment.json"))
    if elmo_eval is not None:
        for key, field in (
            ("elmo_input", "input_score"),
            ("elmo_concat", "concat_score"),
            ("elmo_probe", "mix_probe_score"),
            ("w2v_input", "word2vec_score"),
            ("w2v_probe", "word2vec_probe_score"),
        ):
            rows.append((key, getattr(elmo_eval, field), "checkpoints/elmo/eval_sentiment.json"))
    return [(k, float(v), f) for k, v, f in rows if v is not None]

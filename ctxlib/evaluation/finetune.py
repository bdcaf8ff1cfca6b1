"""Fine-tuning BERT on review sentiment (`python -m ctxlib eval bert --task sentiment`): a classification head on
[CLS] (or the mean of the character vectors), all weights trained, several seeds; plus frozen per-layer probes and
the word2vec baseline on the same reviews.
"""
from __future__ import annotations

import copy
import logging
import math
import time
from pathlib import Path
from typing import Callable

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from .. import checkpoint
from ..models.bert import BertModel, CharTokenizer
from ..models.bert_encoder import BertEncoder
from ..tokens import char_tokens

log = logging.getLogger(__name__)


class _Classifier(nn.Module):
    """A head on the encoder: "cls" is BERT's recipe (tanh pooler on [CLS], then linear); "mean" averages the final
    vectors of the real characters ([CLS]/[SEP]/[PAD] left out) and puts a linear layer on that."""

    def __init__(self, bert: BertModel, n_classes: int = 2, head: str = "cls"):
        super().__init__()
        if head not in ("cls", "mean"):
            raise ValueError(f"head must be 'cls' or 'mean', got {head!r}")
        self.bert, self.kind = bert, head
        self.head = nn.Linear(bert.cfg.hidden, n_classes)
        self.drop = nn.Dropout(0.1)

    def forward(self, ids, seg):
        (h,), _ = self.bert(ids, seg)  # (B, T, D)
        if self.kind == "cls":
            return self.head(self.drop(torch.tanh(self.bert.pooler(h[:, 0]))))  # (B, C)
        real = ((ids != 0) & (ids != 2) & (ids != 3)).unsqueeze(-1).to(h.dtype)  # (B, T, 1): not [PAD]/[CLS]/[SEP]
        return self.head(self.drop((h * real).sum(1) / real.sum(1).clamp(min=1)))  # (B, C)


def fine_tune(model: BertModel, tok: CharTokenizer, texts: list[str], labels, *, epochs: int = 3, lr: float = 1e-4,
              batch: int = 32, seed: int = 0, head: str = "cls", device: str = "cpu", bf16: bool = False,
              warmup: float = 0.1, callback: Callable[[int, int, float, float], None] | None = None) -> _Classifier:
    """Fine-tune a copy of `model` with a classification head on all weights: AdamW, `warmup` share of linear warmup
    then linear decay, batches of similar lengths in random order. The given model is left as it was.
    callback(step, total, loss, batch accuracy) after each step (the app's live plot; an exception it raises stops
    the run)."""
    dev = torch.device(device)
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    y = np.asarray(labels)
    clf = _Classifier(copy.deepcopy(model), n_classes=int(y.max()) + 1, head=head).to(dev)
    opt = torch.optim.AdamW(clf.parameters(), lr=lr, weight_decay=0.01)
    steps = epochs * math.ceil(len(texts) / batch)
    w = max(1, int(steps * warmup))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / w) * max(0.0, 1 - s / steps))
    clf.train()
    L = model.cfg.max_len
    done = 0
    for _ in range(epochs):
        order = rng.permutation(len(texts))
        pool = 16 * batch
        batches = []
        for k in range(0, len(order), pool):
            chunk = sorted(order[k:k + pool], key=lambda i: len(texts[i]))
            batches += [np.array(chunk[j:j + batch]) for j in range(0, len(chunk), batch)]
        for bi in rng.permutation(len(batches)):
            idx = batches[bi]
            ids = _batch_ids(tok, [texts[i] for i in idx], L).to(dev)
            with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=bf16):
                logits = clf(ids, torch.zeros_like(ids))
            gold = torch.tensor(y[idx], device=dev)
            loss = F.cross_entropy(logits.float(), gold)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(clf.parameters(), 1.0)
            opt.step()
            sched.step()
            if callback is not None:
                done += 1
                callback(done, steps, float(loss.detach()), float((logits.argmax(-1) == gold).float().mean()))
    return clf.eval()


@torch.no_grad()
def predict(clf: _Classifier, tok: CharTokenizer, texts: list[str], device: str = "cpu") -> np.ndarray:
    """Predicted class per text."""
    out = np.zeros(len(texts), np.int64)
    order = np.argsort([len(t) for t in texts], kind="stable")
    for k in range(0, len(texts), 128):
        idx = order[k:k + 128]
        ids = _batch_ids(tok, [texts[i] for i in idx], clf.bert.cfg.max_len).to(device)
        out[idx] = clf(ids, torch.zeros_like(ids)).argmax(-1).cpu().numpy()
    return out


def _batch_ids(tok: CharTokenizer, texts: list[str], max_len: int) -> torch.Tensor:
    seqs = [[tok.cls_id] + tok.encode(t)[:max_len - 2] + [tok.sep_id] for t in texts]
    T = max(len(s) for s in seqs)
    ids = torch.zeros(len(seqs), T, dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, :len(s)] = torch.tensor(s)
    return ids


def run_eval(model_name, task: str = "sentiment", device: str = "auto", seed: int = 0, out=None,
             max_train: int | None = None, max_test: int | None = None, epochs: int = 3, lr: float = 1e-4, batch: int = 32,
             amp: bool = True, head: str = "cls", finetune_seeds: int = 3) -> dict:
    """Fine-tune BERT on [CLS] for review sentiment (corpus reviews train/test split), plus frozen
    per-layer logistic probes on mean-pooled features and the same probe on word2vec vectors.
    Writes eval_sentiment.json (ELMo's schema) in the checkpoint folder, or `out`."""
    from .. import analysis
    from ..encoder import load
    from ..training.trainer import fast_bf16, resolve_device
    from . import tasks

    if task != "sentiment":
        raise ValueError(f"BERT evaluation supports task 'sentiment' only, got {task!r}")
    t0 = time.time()
    dev = resolve_device(device)
    use_bf16 = amp and fast_bf16(dev)  # emulated bf16 on an AVX2-only CPU is far slower than fp32
    enc = load(model_name)
    if not isinstance(enc, BertEncoder):
        raise ValueError(f"{model_name} is not a BERT checkpoint")
    # ELMo's sampler and default sizes (ctxlib.evaluation.tasks): exactly the reviews that
    # `python -m ctxlib eval elmo --task sentiment` trains and scores on
    max_train = tasks.N_TRAIN if max_train is None else max_train
    max_test = tasks.N_TEST if max_test is None else max_test
    words_tr, lab_tr = tasks.task_sentences("sentiment", "train", max_train, seed)
    words_te, lab_te = tasks.task_sentences("sentiment", "test", max_test, seed)
    xtr, ytr = ["".join(w) for w in words_tr], np.array(lab_tr)
    xte, yte = ["".join(w) for w in words_te], np.array(lab_te)

    # frozen probes, one per layer, on mean-pooled token vectors ([CLS]/[SEP] left out)
    def pooled(texts):
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # similar lengths together: little padding
        feats = [None] * len(texts)
        for i in range(0, len(order), 64):
            sub = [texts[j] for j in order[i:i + 64]]
            for j, e in zip(order[i:i + 64], enc._encode_tokens([char_tokens(t) for t in sub], sub, need_weights=False)):
                feats[j] = e.layers[:, 1:-1].mean(1) if len(e.tokens) > 2 else e.layers[:, 0]
        return np.stack(feats)  # (n, L+1, D)

    ftr, fte = pooled(xtr), pooled(xte)
    per_layer = [round(analysis.probe_accuracy(ftr[:, j], ytr, fte[:, j], yte), 4) for j in range(ftr.shape[1])]
    log.info("frozen per-layer probes %s (%.0f s)", per_layer, time.time() - t0)
    w2v = None
    try:
        wenc = load("word2vec")
        def wmean(texts):
            return np.stack([e.layers[0].mean(0) if len(e.tokens) else np.zeros(wenc.dim, np.float32) for e in wenc.encode(texts)])
        w2v = round(analysis.probe_accuracy(wmean(xtr), ytr, wmean(xte), yte), 4)
    except Exception as e:  # no shipped word2vec, or it cannot be read: report null, say why in the log
        log.warning("word2vec baseline skipped: %s", e)

    # fine-tuning: all weights, [CLS] pooler + linear head, 3 epochs (Devlin et al. try 2-4), lr 1e-4 (the top of
    # Turc et al. 2019's grid for small BERTs), 10% warmup then linear decay
    # Several fine-tuning seeds: on 3,000 reviews one run's accuracy moves by 1-2 points with the seed alone
    # (bench/bert_finetune_dev.py), as much as the gaps between the models being compared
    per_seed = []
    for k in range(finetune_seeds):
        clf = fine_tune(enc.model, enc.tokenizer, xtr, ytr, epochs=epochs, lr=lr, batch=batch, seed=seed + k, head=head,
                        device=str(dev), bf16=use_bf16)
        per_seed.append(float((predict(clf, enc.tokenizer, xte, device=str(dev)) == yte).mean()))
        log.info("fine-tuning seed %d: %.4f", seed + k, per_seed[-1])
    result = {"task": "sentiment", "model": enc.name, "kind": "bert", "metric": "accuracy",
              "score": round(float(np.mean(per_seed)), 4), "score_per_seed": [round(x, 4) for x in per_seed],
              "score_std": round(float(np.std(per_seed)), 4),
              "per_layer_score": per_layer, "layer_names": enc.layer_names,
              "mix_weights": None, "gamma": None, "expected_layer": None, "word2vec_score": w2v,
              "n_train": len(xtr), "n_test": len(xte), "seconds": round(time.time() - t0, 1),
              "method": f"fine-tune all weights, head {head} ("
                        f"{'tanh pooler on [CLS] + linear' if head == 'cls' else 'mean of the character vectors + linear'}), "
                        f"{epochs} epoch(s), lr {lr}, batch {batch}, mean over {finetune_seeds} fine-tuning seed(s)"
                        f"{', bf16 autocast' if use_bf16 else ''}; "
                        "per_layer_score: frozen logistic probe on mean-pooled character vectors; word2vec_score: "
                        "the same probe on mean word2vec vectors (ELMo's eval_sentiment.json also has word2vec as "
                        "the task model's input, on the same reviews)",
              "seed": seed}
    path = Path(out) if out else Path(enc.path) / "eval_sentiment.json"
    checkpoint.atomic_write_json(path, result)
    log.info("wrote %s", path)
    return result

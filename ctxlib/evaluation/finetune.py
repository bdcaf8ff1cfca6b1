"""BERT on review sentiment, the pieces: fine-tuning (`fine_tune`: a classification head on [CLS], the mean of the
character vectors or a ScalarMix of the layers; all weights trained), `predict`, and the frozen features
(`bert_features`) that the feature-based way and the probes read. The evaluation itself (`python -m ctxlib eval
bert --task sentiment`: both ways, several seeds, eval_sentiment.json) is ctxlib.evaluation.bert_sentiment.
"""

from __future__ import annotations

import copy
import math
from typing import Callable

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from ..models.bert import BertModel, CharTokenizer
from ..tokens import char_tokens

# The default fine-tuning recipe, chosen on the valid split with bench/bert_finetune_dev.py (never the test reviews):
# all weights, a linear head on the mean of the final character vectors, 4 epochs at lr 2e-4. Over seeds 0-2 it scores
# 0.824 on valid (0.829 / 0.824 / 0.820), where Devlin et al.'s [CLS] head (3 epochs, lr 1e-4, the top of Turc et al.
# 2019's grid for small BERTs; the recipe until session 13) scored 0.786 at seed 0: this BERT's [CLS] was trained only
# for next-sentence prediction. Screened beside them at seed 0: [CLS] at 5e-5 x 4 epochs 0.780, [CLS] with head+tail
# truncation 0.783, [CLS] at 2e-4 with layer-wise lr decay 0.8 0.797, mean at 1e-4 x 4 epochs 0.810, x 6 epochs 0.820
# over seeds 0-2. The app's live run keeps the [CLS] head: it is the one the lecture draws.
EPOCHS, LR, BATCH, HEAD, DROPOUT, LLRD, TRUNCATE = 4, 2e-4, 32, "mean", None, 1.0, "head"
# Which way's figure bert_sentiment.run_eval reports as `score`, "finetune" or "features": the one that did better on the valid split,
# over seeds 0-2 with the sense-tuned BERT: fine-tuning with the recipe above 0.824, frozen features as the task model's
# input 0.821 +- 0.003 (a tie; the rule takes the higher). Until session 13 it was features (0.818 against [CLS]
# fine-tuning's 0.733 after its first epoch).
SCORE_FROM = "finetune"
HEADS = ("cls", "cls_fresh", "mean", "mix")  # the classification heads fine_tune knows (_Classifier)


class _Classifier(nn.Module):
    """A head on the encoder: "cls" is BERT's recipe (tanh pooler on [CLS], then linear; the pooler starts from the
    pre-trained NSP pooler); "cls_fresh" the same with a freshly initialised pooler; "mean" averages the final
    vectors of the real characters ([CLS]/[SEP]/[PAD] left out) and puts a linear layer on that; "mix" does the same
    on a learned ScalarMix of all layers (embeddings and every block, each layer-normalised) instead of the top."""

    def __init__(self, bert: BertModel, n_classes: int = 2, head: str = "cls", dropout: float = 0.1):
        super().__init__()
        if head not in HEADS:
            raise ValueError(f"head must be one of {HEADS}, got {head!r}")
        self.bert, self.kind = bert, head
        self.head = nn.Linear(bert.cfg.hidden, n_classes)
        self.drop = nn.Dropout(dropout)
        if head == "cls_fresh":
            nn.init.normal_(bert.pooler.weight, 0.0, 0.02)
            nn.init.zeros_(bert.pooler.bias)
        self.mix = None
        if head == "mix":
            from ..models.scalar_mix import ScalarMix

            self.mix = ScalarMix(bert.cfg.layers + 1, do_layer_norm=True)

    def forward(self, ids, seg):
        layers, _ = self.bert(ids, seg, all_layers=self.kind == "mix")  # [(B, T, D)] * (1 or L+1)
        h = layers[-1]
        if self.kind in ("cls", "cls_fresh"):
            return self.head(self.drop(torch.tanh(self.bert.pooler(h[:, 0]))))  # (B, C)
        real = (ids != 0) & (ids != 2) & (ids != 3)  # (B, T): not [PAD]/[CLS]/[SEP]
        if self.kind == "mix":
            h = self.mix(layers, mask=real)
        m = real.unsqueeze(-1).to(h.dtype)
        return self.head(self.drop((h * m).sum(1) / m.sum(1).clamp(min=1)))  # (B, C)


def set_dropout(bert: BertModel, p: float, p_attn: float | None = None) -> None:
    """Set the dropout rates of a (copied) encoder in place: the shipped BERT was pre-trained without dropout
    (config dropout 0.0), so fine-tuning it as is leaves every encoder weight unregularised."""
    for m in bert.modules():
        if isinstance(m, nn.Dropout):
            m.p = p
        if hasattr(m, "p_attn"):
            m.p_attn = p if p_attn is None else p_attn


def _param_groups(
    clf: "_Classifier", lr: float, weight_decay: float, llrd: float, decay_all: bool = True
) -> list[dict]:
    """AdamW groups: layer-wise LR decay (Howard & Ruder 2018; Sun et al. 2019): block i of L gets lr * llrd^(L-i),
    the embeddings lr * llrd^(L+1), the head, pooler, mix and final LayerNorm the full lr. Weight decay on every
    weight (decay_all, the recipe the shipped figures used), or on matrices only (no decay on biases, LayerNorms and
    the mix scalars, as BERT's own recipe)."""
    L = clf.bert.cfg.layers
    groups: dict = {}
    for n, p in clf.named_parameters():
        if not p.requires_grad:
            continue
        depth = 0
        if n.startswith("bert.blocks."):
            depth = L - int(n.split(".")[2])
        elif n.startswith("bert.") and not n.startswith(("bert.pooler", "bert.ln_f", "bert.nsp_head", "bert.mlm")):
            depth = L + 1  # token/segment/position embeddings and their LayerNorm
        key = (depth, decay_all or p.ndim >= 2)
        groups.setdefault(key, []).append(p)
    return [
        {"params": ps, "lr": lr * llrd**d, "weight_decay": weight_decay if dec else 0.0}
        for (d, dec), ps in groups.items()
    ]


def _length_batches(texts: list[str], order: np.ndarray, batch: int) -> list[np.ndarray]:
    """Batches of similar lengths: `order` cut into pools of 16 batches, each pool sorted by text length and cut."""
    pool = 16 * batch
    batches = []
    for k in range(0, len(order), pool):
        chunk = sorted(order[k : k + pool], key=lambda i: len(texts[i]))
        batches += [np.array(chunk[j : j + batch]) for j in range(0, len(chunk), batch)]
    return batches


def _optimiser(
    clf: "_Classifier", lr: float, weight_decay: float, llrd: float, decay_all: bool, steps: int, warmup: float
):
    """AdamW on _param_groups and its schedule: linear warmup over a `warmup` share of the steps, then linear decay."""
    opt = torch.optim.AdamW(_param_groups(clf, lr, weight_decay, llrd, decay_all), lr=lr)
    w = max(1, int(steps * warmup))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / w) * max(0.0, 1 - s / steps))
    return opt, sched


def _train_step(clf: "_Classifier", opt, sched, ids, gold, bf16: bool, clip: float | None):
    """One optimiser step on a batch; returns (the loss, how many of the batch the classifier got right)."""
    with torch.autocast(ids.device.type, dtype=torch.bfloat16, enabled=bf16):
        logits = clf(ids, torch.zeros_like(ids))
    loss = F.cross_entropy(logits.float(), gold)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    if clip:
        nn.utils.clip_grad_norm_(clf.parameters(), clip)
    opt.step()
    sched.step()
    return loss, int((logits.argmax(-1) == gold).sum())


def fine_tune(
    model: BertModel,
    tok: CharTokenizer,
    texts: list[str],
    labels,
    *,
    epochs: int = EPOCHS,
    lr: float = LR,
    batch: int = BATCH,
    seed: int = 0,
    head: str = HEAD,
    device: str = "cpu",
    bf16: bool = False,
    warmup: float = 0.1,
    dropout: float | None = DROPOUT,
    llrd: float = LLRD,
    weight_decay: float = 0.01,
    decay_all: bool = True,
    clip: float | None = 1.0,
    truncate: str = TRUNCATE,
    select: tuple | None = None,
    callback: Callable[[int, int, float, float], None] | None = None,
    epoch_callback: Callable[[int, "_Classifier", float], None] | None = None,
) -> "_Classifier":
    """Fine-tune a copy of `model` with a classification head on all weights: AdamW, `warmup` share of linear warmup
    then linear decay, batches of similar lengths in random order. The given model is left as it was.
    dropout: the encoder's dropout while fine-tuning (None: as pre-trained); llrd: layer-wise LR decay (1 = none);
    weight_decay on all weights (decay_all) or on matrices only;
    clip: gradient-norm clipping (None: off); truncate: "head" keeps the first characters of a long review,
    "head_tail" its first and last (Sun et al. 2019). select = (texts, labels): score them after each epoch and
    return the best epoch's weights (early stopping on a slice the caller carved from TRAIN; `clf.history`).
    callback(step, total, loss, batch accuracy) after each step (the app's live plot; an exception it raises stops
    the run); epoch_callback(epoch, clf, train accuracy over the epoch) after each epoch (the model in eval mode)."""
    dev = torch.device(device)
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    y = np.asarray(labels)
    bert = copy.deepcopy(model)
    if dropout is not None:
        set_dropout(bert, dropout)
    clf = _Classifier(bert, n_classes=int(y.max()) + 1, head=head).to(dev)
    clf.truncate = truncate
    steps = epochs * math.ceil(len(texts) / batch)
    opt, sched = _optimiser(clf, lr, weight_decay, llrd, decay_all, steps, warmup)
    L = model.cfg.max_len
    done = 0
    clf.history, best = [], (-1.0, None)
    for ep in range(epochs):
        clf.train()
        batches = _length_batches(texts, rng.permutation(len(texts)), batch)
        right = 0
        for bi in rng.permutation(len(batches)):
            idx = batches[bi]
            ids = batch_ids(tok, [texts[i] for i in idx], L, truncate).to(dev)
            loss, hits = _train_step(clf, opt, sched, ids, torch.tensor(y[idx], device=dev), bf16, clip)
            right += hits
            if callback is not None:
                done += 1
                callback(done, steps, float(loss.detach()), hits / len(idx))
        clf.eval()
        point = {"epoch": ep + 1, "train_acc": right / len(texts)}
        if select is not None:
            point["select_acc"] = float((predict(clf, tok, select[0], device=device) == np.asarray(select[1])).mean())
            if point["select_acc"] > best[0]:
                best = (point["select_acc"], copy.deepcopy(clf.state_dict()))
        clf.history.append(point)
        if epoch_callback is not None:
            epoch_callback(ep + 1, clf, right / len(texts))
    if best[1] is not None:
        clf.load_state_dict(best[1])
        clf.best_epoch = max(clf.history, key=lambda p: p["select_acc"])["epoch"]
    return clf.eval()


@torch.no_grad()
def predict(
    clf: _Classifier, tok: CharTokenizer, texts: list[str], device: str = "cpu", truncate: str | None = None
) -> np.ndarray:
    """Predicted class per text (truncated as the classifier was trained, unless `truncate` says otherwise)."""
    truncate = truncate or getattr(clf, "truncate", "head")
    out = np.zeros(len(texts), np.int64)
    order = np.argsort([len(t) for t in texts], kind="stable")
    for k in range(0, len(texts), 128):
        idx = order[k : k + 128]
        ids = batch_ids(tok, [texts[i] for i in idx], clf.bert.cfg.max_len, truncate).to(device)
        out[idx] = clf(ids, torch.zeros_like(ids)).argmax(-1).cpu().numpy()
    return out


def batch_ids(tok: CharTokenizer, texts: list[str], max_len: int, truncate: str = "head") -> torch.Tensor:
    """[CLS] text [SEP] ids, right-padded with 0; a text longer than max_len - 2 tokens keeps its first ones
    ("head") or its first half and last half ("head_tail")."""
    if truncate not in ("head", "head_tail"):
        raise ValueError(f"truncate must be 'head' or 'head_tail', got {truncate!r}")
    cap = max_len - 2
    seqs = []
    for t in texts:
        e = tok.encode(t)
        if len(e) > cap:
            e = e[:cap] if truncate == "head" else e[: cap // 2] + e[len(e) - (cap - cap // 2) :]
        seqs.append([tok.cls_id] + e + [tok.sep_id])
    T = max(len(s) for s in seqs)
    ids = torch.zeros(len(seqs), T, dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = torch.tensor(s)
    return ids


def bert_features(
    enc, sentences: list[list[str]], batch_size: int = 32
) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """Frozen BERT features of word-segmented texts, all layers: (per-text (n_words, L+1, D) float16 word vectors,
    each the mean of its characters' vectors; (n, L+1, D) [CLS] vectors; (n, L+1, D) means over the characters).
    A text longer than max_len - 2 tokens is read in overlapping windows (stride half a window) and each token
    takes its vector from the window where it sits nearest the middle, so no word is cut off."""
    cap = enc.model.cfg.max_len - 2
    tk = enc.tokenizer
    prepared = []
    for ws in sentences:
        text = "".join(ws)
        toks = char_tokens(text)
        n = len(toks)
        starts = [0] if n <= cap else sorted(set(range(0, n - cap, cap // 2)) | {n - cap})
        prepared.append((ws, toks, starts))
    order = sorted(range(len(sentences)), key=lambda i: min(cap, len(prepared[i][1])))
    words_out: list = [None] * len(sentences)
    L1, D = enc.model.cfg.layers + 1, enc.model.cfg.hidden
    cls_out, mean_out = np.zeros((len(sentences), L1, D), np.float32), np.zeros((len(sentences), L1, D), np.float32)
    for b in range(0, len(order), batch_size):
        sel = order[b : b + batch_size]
        seqs, where = [], []
        for i in sel:
            _, toks, starts = prepared[i]
            for s0 in starts:
                where.append((i, s0))
                seqs.append([tk.cls_id] + [tk.token_id(t) for t, _, _ in toks[s0 : s0 + cap]] + [tk.sep_id])
        H, _ = enc.run_ids(seqs, [[0] * len(q) for q in seqs], need_weights=False)  # (W, L+1, T, D)
        win = {}
        for k, (i, s0) in enumerate(where):
            win.setdefault(i, []).append((s0, H[k]))
        for i in sel:
            ws, toks, starts = prepared[i]
            n = len(toks)
            tv = np.zeros((n, L1, D), np.float32)
            for t in range(n):
                s0, h = min(win[i], key=lambda w: abs(t - (w[0] + min(cap, n) / 2)) if w[0] <= t < w[0] + cap else 1e9)
                tv[t] = h[:, 1 + t - s0]
            cls_out[i] = win[i][0][1][:, 0]
            mean_out[i] = tv.mean(0) if n else win[i][0][1][:, 0]
            wv, pos = np.zeros((len(ws), L1, D), np.float32), 0
            for j, w in enumerate(ws):
                idx = [k for k, (_, a, e) in enumerate(toks) if a < pos + len(w) and e > pos]
                if idx:
                    wv[j] = tv[idx].mean(0)
                pos += len(w)
            words_out[i] = wv.astype(np.float16)
    return words_out, cls_out, mean_out

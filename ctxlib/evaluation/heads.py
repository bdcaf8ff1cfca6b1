"""The heads `tasks` trains on frozen features: a linear probe on a ScalarMix of the layers (`train_probe`) and a
small biLSTM task model that takes the mixed features as its input or beside its hidden layer (`train_task_model`).
"""

from __future__ import annotations

import random
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from ..models.scalar_mix import ScalarMix

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


def train_probe(
    xtr,
    ytr,
    xte,
    n_classes,
    *,
    l2=0.0,
    epochs=10,
    lr=1e-2,
    batch=256,
    seed=0,
    max_seconds=0.0,
    callback=None,
    device="cpu",
):
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
            idx = perm[i : i + batch].to(device)
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
        pred = torch.cat(
            [m(torch.from_numpy(xte[i : i + 4096]).to(device)).argmax(-1).cpu() for i in range(0, len(xte), 4096)]
        )
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
        sel = order[i : i + bs]
        T = max(len(ids[j]) for j in sel)
        Ix = np.zeros((len(sel), T), np.int64)
        M = np.zeros((len(sel), T), bool)
        Y = np.full((len(sel),) if sentence else (len(sel), T), -100, np.int64)
        Fe = None
        if feats is not None:
            L, D = feats[sel[0]].shape[1:]
            Fe = np.zeros((len(sel), T, L, D), np.float32)
        for k, j in enumerate(sel):
            n = len(ids[j])
            Ix[k, :n], M[k, :n] = ids[j], True
            if sentence:
                Y[k] = labels[j]
            else:
                Y[k, :n] = labels[j]
            if Fe is not None:
                Fe[k, :n] = std(feats[j].astype(np.float32))
        yield (
            torch.from_numpy(Ix).to(device),
            None if Fe is None else torch.from_numpy(Fe).to(device),
            torch.from_numpy(M).to(device),
            torch.from_numpy(Y).to(device),
        )


def _length_batches(ids, bs, rng=None) -> list[list[int]]:
    """Index batches of similar-length sentences (less padding); shuffled batch order when rng is given."""
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    groups = [order[i : i + bs] for i in range(0, len(order), bs)]
    if rng is not None:
        rng.shuffle(groups)
    return groups


def train_task_model(
    train, test, use, n_classes, word_ids, sentence, *, std=None, epochs=3, lr=5e-3, bs=32, seed=0, device="cpu"
):
    """Train a TaskModel on train = (ids, feats, labels); returns (model, test predictions flattened in order)."""
    torch.manual_seed(seed)
    ids, feats, labels = train
    L, D = feats[0].shape[1:] if feats is not None else (1, 1)
    m = TaskModel(len(word_ids), n_classes, L, D, use, sentence).to(device)
    opt = torch.optim.Adam(_param_groups(m, lr))
    rng = random.Random(seed)
    for _ in range(epochs):
        m.train()
        for grp in _length_batches(ids, bs, rng):
            for Ix, Fe, M, Y in _batches(ids, feats, labels, grp, len(grp), sentence, std, device):
                logits = m(Ix, Fe, M)
                loss = F.cross_entropy(
                    logits if sentence else logits.flatten(0, -2), Y if sentence else Y.flatten(), ignore_index=-100
                )
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
            for Ix, Fe, M, Y in _batches(tids, tfeats, tlabels, grp, len(grp), sentence, std, device):
                p = m(Ix, Fe, M).argmax(-1).cpu().numpy()
                for k, j in enumerate(grp):
                    per[j] = p[k : k + 1] if sentence else p[k, : len(tids[j])]
    return m, np.concatenate(per)

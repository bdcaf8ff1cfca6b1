"""Sense-tuning: a short supervised fine-tune of a pre-trained BERT that pulls the occurrences of a word in the same
sense together at its top layers, on the teaching supplement's labelled *train* sentences, with MLM + NSP on the
corpus beside it so that the language model stays what it was.

    python -m ctxlib sense-tune RUN_DIR --out DIR [--steps 1500] [--seed 0]

Why: a probe reads the sense from the pre-trained vectors on held-out sentences with 0.94 accuracy, but cosine, which
weighs every direction alike, ranks same-sense pairs first only 0.71 of the time (bench/sense_probe.py): the sense is
in the vectors, not what they mostly encode. Each step draws `words` supplement words and `per_word` of their train
sentences, the senses in turn, and adds a supervised contrastive loss (Khosla et al., 2020) on the cosine of the
word's pooled vector at each of `layers` (counted from the top) to the MLM + NSP loss of a corpus batch.

What it may be trained on: the supplement's train split only. Its held-out part (valid + test) and the frozen sense
set, whose words are not in the supplement at all, stay unseen, so the frozen set measures whether the change carries
over to words the tune never saw. The checkpoint's summary keeps the pre-training record and adds `sense_tune`; the
app says on the home page that the model was sense-tuned, and on what.
"""
from __future__ import annotations

import logging
import random
import shutil
import time
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from .. import checkpoint

log = logging.getLogger(__name__)


@dataclass
class SenseTuneConfig:
    steps: int = 1500  # chosen on a dev split of the supplement's train words (600: +0.042, 1500: +0.052 pair ranking)
    lr: float = 2e-4  # peak; linear warmup, then linear decay to 0
    warmup: int = 30
    layers: tuple = (2, 1)  # counted from the top: 1 = the last layer
    words: int = 4  # words per step
    per_word: int = 8  # sentences per word, the senses in turn
    tau: float = 0.1  # temperature of the contrastive loss
    mlm_weight: float = 1.0
    mlm_batch: int = 16
    weight_decay: float = 0.01
    clip: float = 1.0
    max_tokens: int = 126  # characters of a sentence the model reads ([CLS] and [SEP] make 128)


def supcon_loss(z: torch.Tensor, y: torch.Tensor, tau: float) -> torch.Tensor:
    """Supervised contrastive loss: for each row, -mean log softmax(cos / tau) over the rows with its label, the row
    itself left out of both. z: (n, d); y: (n,) int labels."""
    z = F.normalize(z.float(), dim=-1)
    eye = torch.eye(len(y), dtype=torch.bool, device=z.device)
    s = (z @ z.t() / tau).masked_fill(eye, -1e9)
    pos = (y[:, None] == y[None]) & ~eye
    logp = s - torch.logsumexp(s, 1, keepdim=True)
    return -((logp * pos).sum(1) / pos.sum(1).clamp(min=1)).mean()


def train_senses(rows=None) -> dict[str, dict[str, list[str]]]:
    """{word: {sense: [sentence, ...]}} of the supplement's train split, words with at least 2 senses."""
    from ..supplement import train_senses as _train_senses

    return _train_senses(rows)


def _item(tok, text: str, word: str, cap: int) -> tuple[list[int], list[int]] | None:
    """Token ids of [CLS] text [SEP] and the positions of the word's first occurrence; None when it lies past `cap`."""
    from ..tokens import char_tokens

    toks = char_tokens(text)[:cap]
    s = text.find(word)
    e = s + len(word)
    idx = [i + 1 for i, (_, a, b) in enumerate(toks) if a < e and b > s]
    if s < 0 or not idx:
        return None
    return [tok.cls_id] + [tok.token_id(t) for t, _, _ in toks] + [tok.sep_id], idx


def sense_tune(src, out, cfg: SenseTuneConfig | None = None, seed: int = 0, rows=None, paragraphs=None,
               callback=None) -> Path:
    """Sense-tune the BERT checkpoint in `src` and save it in `out` (a new folder, or one to overwrite). `rows`
    (supplement rows) and `paragraphs` (corpus paragraphs for MLM + NSP) default to the built-in ones; callback(step,
    loss) is called every step. Returns `out`."""
    from .. import corpus
    from ..models.bert_encoder import BertEncoder
    from .bert import evaluate_pretraining
    from .bert_data import Documents, PretrainBatches

    cfg = cfg or SenseTuneConfig()
    src, out = Path(src), Path(out)
    enc = BertEncoder.from_checkpoint(src)
    if "sense_tune" in enc.summary:
        raise ValueError(f"{src} is already sense-tuned; start from the pre-trained run")
    model, tok = enc.model.float(), enc.tokenizer
    n_layers = model.cfg.layers
    if not cfg.layers or any(not 1 <= k <= n_layers for k in cfg.layers):
        raise ValueError(f"layers are counted from the top, 1..{n_layers}; got {cfg.layers}")
    data = train_senses(rows)
    if len(data) < cfg.words:
        raise ValueError(f"{len(data)} words with two senses in the supplement's train split; the tune needs {cfg.words}")
    torch.manual_seed(seed)
    rng = random.Random(seed)
    words = list(data)
    docs = Documents(paragraphs if paragraphs is not None else corpus.load("all", "train"), tok)
    mlm = iter(PretrainBatches(docs, cfg.mlm_batch, model.cfg.max_len, seed=seed, whole_word=0.5))
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    model.train()
    t0, ema, ema_c, history = time.time(), None, None, []
    for step in range(cfg.steps):
        for g in opt.param_groups:
            g["lr"] = cfg.lr * min(1.0, (step + 1) / max(1, cfg.warmup)) * (1 - step / cfg.steps)
        items, labels = [], []
        for w in rng.sample(words, cfg.words):
            senses = sorted(data[w])
            for k in range(cfg.per_word):
                s = senses[k % len(senses)]
                it = _item(tok, rng.choice(data[w][s]), w, cfg.max_tokens)
                if it is not None:
                    items.append(it)
                    labels.append((w, senses.index(s)))
        T = max(len(x) for x, _ in items)
        ids = torch.zeros(len(items), T, dtype=torch.long)
        for i, (x, _) in enumerate(items):
            ids[i, :len(x)] = torch.tensor(x)
        hs, _ = model(ids, torch.zeros_like(ids), all_layers=True)
        loss_c = torch.zeros(())
        groups = defaultdict(list)
        for i, (w, _) in enumerate(labels):
            groups[w].append(i)
        for w, rows_i in groups.items():
            y = torch.tensor([labels[i][1] for i in rows_i])
            if len(set(y.tolist())) < 2:
                continue
            for k in cfg.layers:
                h = hs[n_layers + 1 - k]
                z = torch.stack([h[i, items[i][1]].mean(0) for i in rows_i])
                loss_c = loss_c + supcon_loss(z, y, cfg.tau) / (len(groups) * len(cfg.layers))
        loss = loss_c
        if cfg.mlm_weight > 0:
            lm, _ = model.loss(next(mlm))
            loss = loss + cfg.mlm_weight * lm
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip)
        opt.step()
        lv, lc = float(loss.detach()), float(loss_c.detach())
        if not np.isfinite(lv):
            raise FloatingPointError(f"loss became {lv} at step {step}; lower the learning rate")
        ema = lv if ema is None else 0.98 * ema + 0.02 * lv
        ema_c = lc if ema_c is None else 0.98 * ema_c + 0.02 * lc
        if step % 50 == 0 or step == cfg.steps - 1:
            history.append((step, round(ema_c, 4), round(ema, 4)))
            log.info("sense-tune step %d/%d contrastive %.3f total %.3f (%.0f s)", step + 1, cfg.steps, ema_c, ema,
                     time.time() - t0)
        if callback is not None:
            callback(step, lv)
    model.eval()
    summary = dict(enc.summary)
    tuned = {"from": str(src), "seed": seed, "config": {**asdict(cfg), "layers": list(cfg.layers)},
             "words": len(data), "sentences": sum(len(v) for s in data.values() for v in s.values()),
             "data": "teaching supplement, train split (written for this project); held-out part and frozen set unseen",
             "wall_s": round(time.time() - t0, 1), "final_contrastive": round(ema_c or 0.0, 4),
             "final_loss": round(ema or 0.0, 4), "history": history,
             "command": f"python -m ctxlib sense-tune {src} --out {out} --steps {cfg.steps} --seed {seed}"}
    if paragraphs is None:
        tuned["valid"] = evaluate_pretraining(model, tok, corpus.load("corpora", "valid"), n=2000)
    summary["sense_tune"] = tuned
    out.mkdir(parents=True, exist_ok=True)
    if out.resolve() != src.resolve():
        for name in ("timeline.json", "timeline.npz"):  # the pre-training timeline, which the training page replays
            if (src / name).is_file():
                shutil.copy2(src / name, out / name)
    checkpoint.save(out, "bert", model.cfg.to_json(), tok.vocab.to_json(), model.state_dict(), summary, half=True)
    return out

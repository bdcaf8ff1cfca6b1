"""Sense-tuning: a short supervised fine-tune of a pre-trained BERT or ELMo that pulls the occurrences of a word in the same
sense together at its top layers, on the teaching supplement's labelled *train* sentences, with MLM + NSP on the
corpus (ELMo: its biLM loss) beside it so that the language model stays what it was.

    python -m ctxlib sense-tune RUN_DIR --out DIR [--steps 1500] [--lr LR] [--seed 0]

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

import torch
import torch.nn.functional as F

from .. import checkpoint
from ..supplement import train_senses
from .trainer import TrainConfig, Trainer

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

    def __post_init__(self):
        if self.steps <= 0 or not self.lr > 0:
            raise ValueError(f"steps and lr must be positive; got steps={self.steps}, lr={self.lr}")

    def train_config(self) -> TrainConfig:
        """The Trainer's settings for the tune: fp32 on the CPU, the decay from step 0 down to 0 under the warmup
        ramp (lr * min(1, (step + 1) / warmup) * (1 - step / steps)), gradients clipped to `clip`."""
        return TrainConfig(
            steps=self.steps,
            lr=self.lr,
            warmup=self.warmup,
            min_lr_ratio=0.0,
            weight_decay=self.weight_decay,
            clip=self.clip,
            amp="off",
            log_every=self.steps,
            progress=False,
        )


def supcon_loss(z: torch.Tensor, y: torch.Tensor, tau: float) -> torch.Tensor:
    """Supervised contrastive loss: for each row, -mean log softmax(cos / tau) over the rows with its label, the row
    itself left out of both. z: (n, d); y: (n,) int labels."""
    z = F.normalize(z.float(), dim=-1)
    eye = torch.eye(len(y), dtype=torch.bool, device=z.device)
    s = (z @ z.t() / tau).masked_fill(eye, -1e9)
    pos = (y[:, None] == y[None]) & ~eye
    logp = s - torch.logsumexp(s, 1, keepdim=True)
    return -((logp * pos).sum(1) / pos.sum(1).clamp(min=1)).mean()


class _BertSide:
    """What the tune needs of a BERT: the word's pooled vectors with gradients, an MLM + NSP batch loss, the held-out
    MLM figures, saving."""

    kind = "bert"
    valid_key = "valid"  # where the pre-training run put its held-out figures in the summary

    def __init__(self, src: Path, cfg: SenseTuneConfig, seed: int, paragraphs):
        from .. import corpus
        from ..models.bert_encoder import BertEncoder
        from .bert_batches import PretrainBatches
        from .bert_data import Documents

        self.enc = BertEncoder.from_checkpoint(src)
        self.model, self.tok = self.enc.model.float(), self.enc.tokenizer
        self.n_layers, self.cap = self.model.cfg.layers, min(cfg.max_tokens, self.model.cfg.max_len - 2)
        self.own_corpus = paragraphs is None
        docs = Documents(paragraphs if paragraphs is not None else corpus.load("all", "train"), self.tok)
        self._lm = iter(PretrainBatches(docs, cfg.mlm_batch, self.model.cfg.max_len, seed=seed, whole_word=0.5))

    def item(self, text: str, word: str):
        """Token ids of [CLS] text [SEP] and the positions of the word's first occurrence; None past the cap."""
        from ..tokens import char_tokens

        toks = char_tokens(text)[: self.cap]
        s = text.find(word)
        e = s + len(word)
        idx = [i + 1 for i, (_, a, b) in enumerate(toks) if a < e and b > s]
        if s < 0 or not idx:
            return None
        return [self.tok.cls_id] + [self.tok.token_id(t) for t, _, _ in toks] + [self.tok.sep_id], idx

    def vectors(self, items, from_top) -> list[torch.Tensor]:
        T = max(len(x) for x, _ in items)
        ids = torch.zeros(len(items), T, dtype=torch.long)
        for i, (x, _) in enumerate(items):
            ids[i, : len(x)] = torch.tensor(x)
        hs, _ = self.model(ids, torch.zeros_like(ids), all_layers=True)
        return [
            torch.stack([hs[self.n_layers + 1 - k][i, idx].mean(0) for i, (_, idx) in enumerate(items)])
            for k in from_top
        ]

    def lm_loss(self) -> torch.Tensor:
        return self.model.loss(next(self._lm))[0]

    def valid(self) -> dict:
        from .. import corpus
        from .bert import evaluate_pretraining

        return evaluate_pretraining(self.model, self.tok, corpus.load("corpora", "valid"), n=2000)

    def save(self, out: Path, summary: dict):
        checkpoint.save(
            out, "bert", self.model.cfg.to_json(), self.tok.vocab.to_json(), self.model.state_dict(), summary, half=True
        )


class _ElmoSide:
    """The same for an ELMo: the word's token at the biLSTM layers (forward || backward), the biLM's loss on corpus
    sentences beside it, held-out perplexity."""

    kind = "elmo"
    valid_key = "perplexity"

    def __init__(self, src: Path, cfg: SenseTuneConfig, seed: int, paragraphs):
        from .. import corpus
        from ..models.elmo import ElmoEncoder
        from .elmo import PRESETS, paragraph_sentences
        from .elmo_batches import BucketBatches

        self.enc = ElmoEncoder.from_checkpoint(src)
        self.model, self.feat = self.enc.model.float(), self.enc.featurizer
        self.n_layers, self.cap = self.model.cfg.n_layers, cfg.max_tokens
        self.own_corpus = paragraphs is None
        self.max_len = PRESETS["long"].data["max_len"]
        pars = paragraphs if paragraphs is not None else corpus.load("all", "train")
        self._lm = iter(
            BucketBatches(paragraph_sentences(pars, self.max_len), self.feat, cfg.mlm_batch * 50, seed=seed)
        )  # ~ the BERT batch's tokens

    def item(self, text: str, word: str):
        """The sentence's words (the word kept whole, as the app segments it) and the word's position; None when
        it is not a token of its own or lies past the cap."""
        toks = self.enc.tokenize(text, word)[: self.cap]
        s = text.find(word)
        k = next((i for i, (w, a, _) in enumerate(toks) if a == s and w == word), None)
        return None if s < 0 or k is None else ([w for w, _, _ in toks], k + 1)  # +1: <S>

    def vectors(self, items, from_top) -> list[torch.Tensor]:
        b = self.feat.batch([w for w, _ in items])
        lay = self.model.layers(b["uniq"], b["idx"], b["lengths"])  # (L+1, B, T, 2D)
        rows = torch.arange(len(items))
        pos = torch.tensor([k for _, k in items])
        return [lay[self.n_layers + 1 - k][rows, pos] for k in from_top]

    def lm_loss(self) -> torch.Tensor:
        return self.model.loss(next(self._lm))[0]

    def valid(self) -> dict:
        from .. import corpus
        from .elmo import PRESETS, held_out_sentences, perplexity

        valid = held_out_sentences(
            corpus.load("corpora", "valid"), self.max_len, PRESETS["long"].data["valid_sentences"], 0
        )
        return perplexity(self.model, self.feat, valid, torch.device("cpu"))

    def save(self, out: Path, summary: dict):
        checkpoint.save(
            out,
            "elmo",
            asdict(self.model.cfg),
            {"words": self.feat.word_vocab.to_json(), "chars": self.feat.char_vocab.to_json()},
            self.model.state_dict(),
            summary,
        )


SIDES = {"bert": _BertSide, "elmo": _ElmoSide}
SENSE_TUNE_LR = {"bert": 2e-4, "elmo": 5e-4}  # the command's default peak learning rate per kind


def sense_tune(
    src, out, cfg: SenseTuneConfig | None = None, seed: int = 0, rows=None, paragraphs=None, exclude=(), callback=None
) -> Path:
    """Sense-tune the BERT or ELMo checkpoint in `src` and save it in `out`. `rows` (supplement rows) and
    `paragraphs` (corpus paragraphs for the LM loss) default to the built-in ones; `exclude` leaves words out of the
    tune (a dev split: how far the change carries to words it did not see); callback(step, loss) every step."""
    cfg = cfg or SenseTuneConfig()
    src, out = Path(src), Path(out)
    side, data = _prepare(src, cfg, seed, rows, paragraphs, exclude)
    t0 = time.time()
    ema, ema_c, history = _tune(side, data, cfg, random.Random(seed), callback)
    side.model.eval()
    summary = dict(side.enc.summary)
    tuned = {
        "from": str(src),
        "seed": seed,
        "config": {**asdict(cfg), "layers": list(cfg.layers)},
        "words": len(data),
        "sentences": sum(len(v) for s in data.values() for v in s.values()),
        "excluded": sorted(set(exclude)),
        "data": "teaching supplement, train split (written for this project); held-out part and frozen set unseen",
        "wall_s": round(time.time() - t0, 1),
        "final_contrastive": round(ema_c or 0.0, 4),
        "final_loss": round(ema or 0.0, 4),
        "history": history,
        "command": f"python -m ctxlib sense-tune {src} --out {out} --steps {cfg.steps} --lr {cfg.lr:g} --seed {seed}",
    }
    if side.own_corpus:  # the summary's held-out figures describe these weights; the pre-trained ones move to "before"
        with torch.no_grad():
            after = side.valid()
        tuned["before"] = {side.valid_key: summary.get(side.valid_key)}
        summary[side.valid_key] = after
    summary["sense_tune"] = tuned
    _save(side, src, out, summary)
    return out


def _prepare(src: Path, cfg: SenseTuneConfig, seed: int, rows, paragraphs, exclude):
    """The model's side (its checkpoint loaded, torch seeded first) and the supplement's {word: {sense: [sentences]}}
    to tune on; ValueError for a checkpoint or a set of words the tune cannot take."""
    kind = checkpoint.read_config(src).get("kind")
    if kind not in SIDES:
        raise ValueError(f"{src} holds a {kind} model; sense-tune is for BERT and ELMo checkpoints")
    torch.manual_seed(seed)
    side = SIDES[kind](src, cfg, seed, paragraphs)
    if "sense_tune" in side.enc.summary:
        raise ValueError(f"{src} is already sense-tuned; start from the pre-trained run")
    if not cfg.layers or any(not 1 <= k <= side.n_layers for k in cfg.layers):
        raise ValueError(f"layers are counted from the top, 1..{side.n_layers}; got {cfg.layers}")
    data = {w: v for w, v in train_senses(rows).items() if w not in set(exclude)}
    if len(data) < cfg.words:
        raise ValueError(
            f"{len(data)} words with two senses in the supplement's train split; the tune needs {cfg.words}"
        )
    return side, data


def _tune(side, data: dict, cfg: SenseTuneConfig, rng: random.Random, callback) -> tuple:
    """cfg.steps optimizer steps of the Trainer (AdamW with torch's defaults on every parameter, the schedule and
    clipping of cfg.train_config(), its NaN check) on SenseLoss; (ema of the loss, ema of the contrastive loss,
    history of (step, contrastive, total) every 50 steps). Ctrl-C or SIGTERM: KeyboardInterrupt, nothing saved."""
    adapter = SenseLoss(side, cfg, callback)
    trainer = Trainer(
        side.model,
        _draws(side, data, cfg, rng),
        cfg.train_config(),
        device="cpu",
        callback=adapter.after_step,
        loss_fn=adapter,
        optimizer=lambda m: torch.optim.AdamW(m.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay),
        schedule="decay_from_start",
    )
    if trainer.run()["stopped_early"]:
        raise KeyboardInterrupt(f"sense-tune stopped at step {trainer.step} of {cfg.steps}; nothing was saved")
    return trainer.ema, adapter.ema_c, adapter.history


class SenseLoss:
    """The loss adapter the Trainer steps with: a batch is one step's draw (_draw: items and labels), its loss the
    contrastive loss plus cfg.mlm_weight times the side's LM loss on its next corpus batch. It keeps what the
    summary records beside the Trainer's loss EMA: the contrastive loss's EMA and the history every 50 steps."""

    def __init__(self, side, cfg: SenseTuneConfig, callback=None):
        self.side, self.cfg, self.callback = side, cfg, callback
        self.last = (0.0, 0.0)  # (total, contrastive) loss of the step just taken
        self.ema_c: float | None = None
        self.history: list[tuple] = []
        self.t0 = time.time()

    def __call__(self, batch) -> tuple[torch.Tensor, int]:
        items, labels = batch
        loss_c = _contrastive(self.side, items, labels, self.cfg)
        loss = loss_c + self.cfg.mlm_weight * self.side.lm_loss() if self.cfg.mlm_weight > 0 else loss_c
        self.last = (float(loss.detach()), float(loss_c.detach()))
        return loss, len(items)

    def after_step(self, step: int, ema: float, info: dict) -> None:
        """The Trainer's callback (step counted from 1, after its NaN check): the contrastive EMA, the history
        (steps counted from 0), a log line, and the caller's callback(step from 0, loss)."""
        s, (lv, lc) = step - 1, self.last
        self.ema_c = lc if self.ema_c is None else 0.98 * self.ema_c + 0.02 * lc
        if s % 50 == 0 or step == self.cfg.steps:
            self.history.append((s, round(self.ema_c, 4), round(ema, 4)))
            log.info(
                "sense-tune step %d/%d contrastive %.3f total %.3f (%.0f s)",
                step,
                self.cfg.steps,
                self.ema_c,
                ema,
                time.time() - self.t0,
            )
        if self.callback is not None:
            self.callback(s, lv)


def _draws(side, data: dict, cfg: SenseTuneConfig, rng: random.Random):
    """The Trainer's batches: one _draw per step, without end."""
    words = list(data)
    while True:
        yield _draw(side, data, words, cfg, rng)


def _draw(side, data: dict, words: list, cfg: SenseTuneConfig, rng: random.Random) -> tuple[list, list]:
    """One step's examples: `cfg.words` words, `cfg.per_word` train sentences each with the senses in turn; the
    side's items and their (word, sense index) labels."""
    items, labels = [], []
    for w in rng.sample(words, cfg.words):
        senses = sorted(data[w])
        for k in range(cfg.per_word):
            s = senses[k % len(senses)]
            it = side.item(rng.choice(data[w][s]), w)
            if it is not None:
                items.append(it)
                labels.append((w, senses.index(s)))
    return items, labels


def _contrastive(side, items: list, labels: list, cfg: SenseTuneConfig) -> torch.Tensor:
    """The supervised contrastive loss of each word's occurrences at each of cfg.layers, averaged over the words
    with two senses in the step and the layers."""
    loss_c = torch.zeros(())
    groups = defaultdict(list)
    for i, (w, _) in enumerate(labels):
        groups[w].append(i)
    zs = side.vectors(items, cfg.layers) if items else []
    for w, rows_i in groups.items():
        y = torch.tensor([labels[i][1] for i in rows_i])
        if len(set(y.tolist())) < 2:
            continue
        for z in zs:
            loss_c = loss_c + supcon_loss(z[rows_i], y, cfg.tau) / (len(groups) * len(zs))
    return loss_c


def _save(side, src: Path, out: Path, summary: dict) -> None:
    """The sense-tuned checkpoint in `out`, with the pre-training timeline copied beside it."""
    out.mkdir(parents=True, exist_ok=True)
    if out.resolve() != src.resolve():
        for name in ("timeline.json", "timeline.npz"):  # the pre-training timeline, which the training page replays
            if (src / name).is_file():
                shutil.copy2(src / name, out / name)
    side.save(out, summary)

"""GPT pre-training (next-character LM): the presets, the batches, `build_model`, `train()` and the held-out
bits per character.

The model is BERT's network with `causal=True` (ctxlib.models.bert, ctxlib.models.gpt), trained on the same
corpus (the train split of People's Daily, the reviews and the teaching supplement) with the same vocabulary
rule (CharTokenizer.build) and the same Trainer, run folder, resume and timeline as ctxlib.training.bert.

A training sequence is a window of at most max_len consecutive characters of one document: input `[CLS]`
c_0 ... c_{n-2}, target c_0 ... c_{n-1} (the character after each position). Documents longer than max_len
give several windows; windows are grouped by length within a pool of batches, so little compute goes to [PAD].
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch

from .. import checkpoint
from ..models.bert import BertModel, CharTokenizer
from ..models.gpt import GptEncoder
from . import bert as bert_training
from .presets import Preset, named
from .resume import ResumableBatches

log = logging.getLogger(__name__)

# data keys: batch (windows per step), max_paragraphs (a random sample of the train split; None = all),
# min_count (of a character to enter the vocabulary), valid_chars (held-out characters for the final bits per
# character; None = the whole valid split), optionally timeline_valid (held-out windows of the timeline's loss at
# each snapshot; VALID_WINDOWS when absent, and fewer read only BERT's cached sample of the valid split)
PRESETS: dict[str, Preset] = named(
    {
        # tests: a few seconds on a slice of the corpus
        "tiny": Preset(
            model=dict(hidden=32, layers=2, heads=2, ffn=64, max_len=64),
            steps=60,
            lr=3e-3,
            warmup=5,
            timeline=False,
            data=dict(batch=16, max_paragraphs=400, min_count=1, valid_chars=20000),
        ),
        # BERT's default size; a step schedule, not a time budget, so the result does not depend on how busy the CPU
        # is: 8,000 steps of 32 windows (~14 M characters, ~5.4 epochs), ~2.5-3.5 h on one CPU thread (fp32) in
        # stretches with --stretch/--resume. 20,000 steps (13.5 epochs, the previous shipped GPT) overfitted: train loss
        # 2.42 but 6.13 held-out bits per character; 8,000 steps end at 3.29 and 5.69 bits per character.
        "default": Preset(
            model=dict(hidden=256, layers=4, heads=4, ffn=1024, max_len=128, dropout=0.0, attn_dropout=0.0),
            steps=8000,
            lr=1e-3,
            warmup=100,
            budget_s=0.0,
            amp="auto",
            data=dict(batch=32, max_paragraphs=None, min_count=2, valid_chars=None),
        ),
        # as BERT's long run: rotary positions, a step schedule (no time budget), run in stretches with --resume
        "long": Preset(
            model=dict(
                hidden=256, layers=4, heads=4, ffn=1024, max_len=128, dropout=0.0, attn_dropout=0.0, positions="rope"
            ),
            steps=28000,
            lr=1e-3,
            warmup=500,
            budget_s=0.0,
            amp="auto",
            data=dict(batch=32, max_paragraphs=None, min_count=2, valid_chars=None),
        ),
    }
)


def build_model(tok: CharTokenizer, model_kw: dict, seed: int = 0) -> BertModel:
    """BERT's `build_model` (same seeding) with the left-to-right flag."""
    return bert_training.build_model(tok, {**model_kw, "causal": True}, seed)


# ----------------------------------------------------------------------------- data
def encode_documents(paragraphs, tok: CharTokenizer) -> list[np.ndarray]:
    """Each paragraph's character ids (empty paragraphs left out)."""
    out = (np.array(tok.encode(p.text), dtype=np.int64) for p in paragraphs)
    return [d for d in out if len(d)]


def windows(docs: list[np.ndarray], max_len: int) -> np.ndarray:
    """(W, 3) rows (document, start, end): consecutive windows of at most max_len characters of each document."""
    rows = [(i, s, min(s + max_len, len(d))) for i, d in enumerate(docs) for s in range(0, len(d), max_len)]
    return np.array(rows, dtype=np.int64).reshape(-1, 3)


def collate(docs: list[np.ndarray], rows, cls_id: int, pad_id: int = 0) -> dict:
    """Windows to a batch: ids (B, T) = [CLS] + the window without its last character, labels (B, T) = the
    window (the next character at each position), -100 at [PAD]."""
    T = int(max(e - s for _, s, e in rows))
    ids = np.full((len(rows), T), pad_id, np.int64)
    labels = np.full((len(rows), T), -100, np.int64)
    for b, (d, s, e) in enumerate(rows):
        w = docs[d][s:e]
        ids[b, 0] = cls_id
        ids[b, 1 : len(w)] = w[:-1]
        labels[b, : len(w)] = w
    return {"ids": torch.from_numpy(ids), "labels": torch.from_numpy(labels)}


class GptBatches(ResumableBatches):
    """An endless iterable of collated batches of windows; each epoch visits every window once in a new order.
    Windows are taken `pool` batches at a time and grouped by length.

    Data parallel: every rank draws the same epoch permutation and takes every `world`-th window from it (its
    shard). The position (epoch, the order generator's state at the epoch's start, batches done) restarts a
    resumed run exactly where it stopped."""

    def __init__(
        self,
        docs: list[np.ndarray],
        cls_id: int,
        batch_size: int,
        max_len: int,
        seed: int = 0,
        pool: int = 16,
        rank: int = 0,
        world: int = 1,
    ):
        if not 0 <= rank < world:
            raise ValueError(f"rank {rank} outside world size {world}")
        self.docs, self.cls_id, self.batch_size, self.pool = docs, cls_id, batch_size, max(1, pool)
        self.rows = windows(docs, max_len)
        if len(self.rows) // world < batch_size:
            raise ValueError(
                f"{len(self.rows)} windows give each of {world} process(es) fewer than one batch of {batch_size}"
            )
        self.seed, self.rank, self.world = seed, rank, world
        self.order_rng = np.random.default_rng([seed, 7919])  # the same on every rank
        self.epoch = 0

    def _plan(self) -> list[np.ndarray]:
        """This epoch's batches (window indices) for this rank; draws the epoch's order from order_rng."""
        order = self.order_rng.permutation(len(self.rows))[self.rank :: self.world]
        rng = np.random.default_rng([self.seed, self.rank, self.epoch])
        lens = self.rows[:, 2] - self.rows[:, 1]
        bs, plan = self.batch_size, []
        for k in range(0, len(order) - bs + 1, bs * self.pool):
            chunk = order[k : k + bs * self.pool]
            chunk = chunk[: len(chunk) - len(chunk) % bs]
            chunk = chunk[np.argsort(lens[chunk], kind="stable")]
            groups = [chunk[i : i + bs] for i in range(0, len(chunk), bs)]
            plan.extend(groups[g] for g in rng.permutation(len(groups)))
        return plan

    def __iter__(self):
        start, self._start = self._start, None
        if start is not None:
            self.epoch = int(start["epoch"])
            self.order_rng.bit_generator.state = start["order_rng"]
        while True:
            order_state = self.order_rng.bit_generator.state
            plan = self._plan()
            skip, start = (int(start["done"]) if start is not None else 0), None
            for n in range(skip, len(plan)):
                self._pos = {"epoch": self.epoch, "order_rng": order_state, "done": n + 1}
                yield collate(self.docs, self.rows[plan[n]], self.cls_id)
            self.epoch += 1


# ----------------------------------------------------------------------------- held-out
def _valid_batches(
    model: BertModel,
    tok: CharTokenizer,
    paragraphs,
    max_chars: int | None,
    batch: int = 64,
    max_windows: int | None = None,
) -> tuple[list[dict], int]:
    """Batches of the first windows (up to `max_windows`) of the first paragraphs (up to `max_chars`
    characters), sorted by length; and the characters they predict."""
    docs, n, w = [], 0, 0
    for d in encode_documents(paragraphs, tok):
        if (max_chars is not None and n >= max_chars) or (max_windows is not None and w >= max_windows):
            break  # the windows asked for are there: the rest of the paragraphs need no encoding
        docs.append(d)
        n += len(d)
        w += -(-len(d) // model.cfg.max_len)
    rows = windows(docs, model.cfg.max_len)[:max_windows]
    rows = rows[np.argsort(rows[:, 2] - rows[:, 1], kind="stable")]
    return [collate(docs, rows[i : i + batch], tok.cls_id) for i in range(0, len(rows), batch)], int(
        (rows[:, 2] - rows[:, 1]).sum()
    )


@torch.no_grad()
def _nats(model: BertModel, batches: list[dict], unk_id: int = 1) -> tuple[float, int, int]:
    """(summed cross-entropy in nats, predicted characters, of them [UNK]) over `batches`."""
    dev = next(model.parameters()).device
    was = model.training
    model.eval()
    tot, n, unk = 0.0, 0, 0
    for b in batches:
        loss, k = model.lm_loss({key: v.to(dev) for key, v in b.items()})
        tot += float(loss) * k
        n += k
        unk += int((b["labels"] == unk_id).sum())
    model.train(was)
    return tot, n, unk


def evaluate_lm(model: BertModel, tok: CharTokenizer, paragraphs, max_chars: int | None = None) -> dict:
    """Held-out bits per character (and perplexity per character) of the next-character prediction, over the
    paragraphs' windows ([CLS] first, as in training; the first `max_chars` characters, None = all)."""
    nats, n, unk = _nats(model, _valid_batches(model, tok, paragraphs, max_chars)[0], tok.unk_id)
    per = nats / max(n, 1)
    return {
        "bits_per_char": round(per / math.log(2), 4),
        "perplexity_per_char": round(math.exp(per), 3),
        "n_chars": n,
        "unk_share": round(unk / max(n, 1), 4),
    }


VALID_WINDOWS = 256  # held-out windows of the timeline's loss (a preset's data["timeline_valid"] can ask for fewer)


def _valid_paragraphs(n: int) -> list:
    """The paragraphs the timeline's held-out loss takes its first `n` windows from: the valid split of the corpora;
    for fewer than VALID_WINDOWS (the training page's live runs) the fixed sample BERT's live runs use (8n paragraphs,
    kept for the process), so a run does not load and tokenise the whole split before its first step."""
    from .. import corpus

    if n >= VALID_WINDOWS:
        return corpus.load("corpora", "valid")
    return list(bert_training.valid_sample(8 * n))


def _valid_loss_fn(model: BertModel, tok: CharTokenizer, paragraphs, n: int = VALID_WINDOWS):
    """Held-out next-character loss (nats per character) on the first n windows of the paragraphs (the timeline's
    held-out curve)."""
    batches, _ = _valid_batches(model, tok, paragraphs, None, max_windows=n)

    def fn() -> float:
        nats, k, _ = _nats(model, batches)
        return nats / max(k, 1)

    return fn


# ----------------------------------------------------------------------------- training
def _run_folder(spec, o, rank: int, world: int, model: BertModel, tok: CharTokenizer, batches: GptBatches):
    """The run's folder: checkpoints, resume state and (rank 0, when the preset records one) the timeline."""
    from .run import RunFolder
    from .timeline import Timeline

    tl = None
    if spec.plan.timeline and o.timeline and rank == 0:
        n_valid = spec.plan.data.get("timeline_valid", VALID_WINDOWS)
        valid_loss = _valid_loss_fn(model, tok, _valid_paragraphs(n_valid), n=n_valid)
        tl = Timeline(
            "gpt",
            spec.plan.steps,
            model,
            lambda: GptEncoder("live", model.cfg.to_json(), {}, None, model, tok),
            valid_loss,
        )
    batch = spec.plan.data["batch"]
    return RunFolder(
        spec,
        rank,
        world,
        timeline=tl,
        save_checkpoint=lambda summary: checkpoint.save(
            spec.out, "gpt", model.cfg.to_json(), tok.vocab.to_json(), model.state_dict(), summary, half=True
        ),
        summary_extra=lambda tr: {"epochs": round(tr.step * batch / max(1, len(batches.rows)), 3)},
    )


def train(
    preset: Preset | str = "default",
    device: str = "auto",
    out=None,
    seed: int = 0,
    time_limit: float = 0.0,
    callback=None,
    paragraphs=None,
    corpus_path=None,
    **run_options,
) -> Path:
    """Pre-train the next-character LM on the train split of all sources and save a checkpoint (default
    checkpoints/gpt); the arguments are training.bert.train's. The summary gets the held-out bits per character
    on the valid split of the corpora ("valid")."""
    from .. import corpus
    from .run import RunOptions, RunSpec
    from .trainer import Trainer, init_distributed

    if corpus_path is not None:
        raise ValueError("GPT trains on the built-in corpus only (no --corpus yet)")
    o = RunOptions(**run_options)
    rank, world = init_distributed(device)
    spec = RunSpec.make("gpt", preset, seed, out, o.resume, None, o.steps, o.init_from)
    P, seed, out = spec.plan, spec.seed, spec.out
    data = P.data
    t0 = time.time()
    if paragraphs is None:
        paragraphs = bert_training.train_paragraphs(data["max_paragraphs"], seed)
    if spec.resumed is not None:
        tok, model = bert_training.resumed_model(spec)
    else:
        tok = CharTokenizer.build(paragraphs, min_count=data["min_count"])
        model = build_model(tok, P.model, seed)
    if data["batch"] % world:
        raise ValueError(f"batch {data['batch']} is not divisible by the {world} processes")
    docs = encode_documents(paragraphs, tok)
    batches = GptBatches(docs, tok.cls_id, data["batch"] // world, model.cfg.max_len, seed=seed, rank=rank, world=world)
    tc = bert_training.train_config(P, o, time_limit)
    if rank == 0:
        log.info(
            "GPT %s: %d params, vocab %d, %d documents, %d windows, preset %s, %d process(es)%s",
            asdict(model.cfg),
            sum(p.numel() for p in model.parameters()),
            len(tok),
            len(docs),
            len(batches.rows),
            spec.preset,
            world,
            f", resuming {out} at step {spec.state['step']}" if spec.state else "",
        )
    folder = _run_folder(spec, o, rank, world, model, tok, batches)
    trainer = Trainer(model, batches, tc, device, callback, state=spec.state, **folder.hooks())
    folder.start()
    summary = trainer.run()
    model = model.float()
    if summary["finished"] and rank == 0:
        summary["valid"] = evaluate_lm(model, tok, corpus.load("corpora", "valid"), max_chars=data["valid_chars"])
        log.info("held-out: %s", summary["valid"])
    summary.update(total_wall_s=round(time.time() - t0, 1), preset=spec.preset, seed=seed)
    folder.finish(trainer, summary)
    return out

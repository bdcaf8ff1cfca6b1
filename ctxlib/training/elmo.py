"""ELMo training: the presets, held-out perplexity, the softmax speed benchmark and `train()`. The sentence
batching (in memory or streamed from a user's files) is in training/elmo_batches.py; the biLM and its Encoder are in
ctxlib.models.elmo.
"""

from __future__ import annotations

import copy
import logging
import math
import random
import time
from dataclasses import asdict
from pathlib import Path
from typing import Callable

import torch

from .. import checkpoint
from ..corpus import nfkc
from ..device import resolve_device, to_device
from ..models.elmo import CHAR_SPECIALS, WORD_SPECIALS, ElmoConfig, ElmoEncoder, ElmoLM, Featurizer
from ..vocab import Vocab
from .elmo_batches import BucketBatches, StreamBatches, chunk_sentences
from .presets import Preset, named
from .trainer import TrainConfig, Trainer

log = logging.getLogger(__name__)


# Presets: model config + training plan. "default" is the shipped model; its lr schedule is planned by time.
PRESETS: dict[str, Preset] = named(
    {
        "tiny": Preset(
            model=dict(
                filters=[[1, 8], [2, 8], [3, 16]],
                max_chars=6,
                dim=16,
                hidden=32,
                vocab_size=500,
                cutoffs=[50, 200],
                dropout=0.0,
            ),
            steps=30,
            lr=3e-3,
            warmup=3,
            budget_s=0.0,
            amp="off",
            timeline=False,
            data=dict(paragraphs=300, batch_tokens=400, max_len=30, bench_steps=2, valid_sentences=100),
        ),
        # the shipped model: 110 minutes for the whole command on one core of the 2-core CPU (OMP_NUM_THREADS=1,
        # trained beside BERT on the other core)
        "default": Preset(
            model=dict(),
            steps=100000,
            lr=2e-3,
            warmup=200,
            budget_s=6600.0,
            amp="off",
            data=dict(paragraphs=0, batch_tokens=1600, max_len=50, bench_steps=8, valid_sentences=3000),
        ),
        # the long run (models issue): the same model, bf16 autocast (measured 1.24x faster here), a step schedule with
        # no time budget, so it runs in stretches with --resume; ~6 h on one CPU thread
        "long": Preset(
            model=dict(),
            steps=20000,
            lr=2e-3,
            warmup=200,
            budget_s=0.0,
            amp="auto",
            data=dict(paragraphs=0, batch_tokens=1600, max_len=50, bench_steps=0, valid_sentences=3000),
        ),
    }
)


def paragraph_sentences(pars, max_len: int) -> list[list[str]]:
    """Paragraphs -> their sentences as NFKC word lists, cut into pieces of at most `max_len` words."""
    return chunk_sentences([[nfkc(w) for w in p.words[a:b]] for p in pars for a, b in p.sentences()], max_len)


def held_out_sentences(pars, max_len: int, n: int, seed: int) -> list[list[str]]:
    """A fixed sample of `n` sentences of `pars` (the held-out perplexity's)."""
    valid = paragraph_sentences(pars, max_len)
    return random.Random(seed).sample(valid, min(n, len(valid)))


def build_vocabs(sents, cfg: ElmoConfig, char_min_count: int = 2) -> tuple[Vocab, Vocab]:
    words = Vocab.build(sents, min_count=1, max_size=cfg.vocab_size, specials=WORD_SPECIALS, unk="<unk>")
    chars = Vocab.build(
        ([ch for w in s for ch in w] for s in sents), min_count=char_min_count, specials=CHAR_SPECIALS, unk="<unk>"
    )
    return words, chars


@torch.no_grad()
def perplexity(model: ElmoLM, feat: Featurizer, sents, device, batch_tokens: int = 4000) -> dict:
    """Full-softmax held-out perplexity of each direction (targets include </S>, <S> and <unk>)."""
    model.eval()
    tot = {"forward": 0.0, "backward": 0.0}
    n = unk = 0
    for grp in BucketBatches(sents, feat, batch_tokens).groups:
        b = to_device(feat.batch([sents[i] for i in grp]), device)
        hf, yf, hb, yb = model.lm_pairs(b)
        tot["forward"] += float(model.target_nll(hf, yf).sum())
        tot["backward"] += float(model.target_nll(hb, yb).sum())
        n += yf.numel()
        unk += int((yf == feat.word_vocab.unk).sum())
    out = {k: round(math.exp(v / max(n, 1)), 2) for k, v in tot.items()}
    return {**out, "tokens": n, "unk_rate": round(unk / max(n, 1), 4)}


def _speed(model: ElmoLM, batches, steps: int, device, amp: bool) -> float:
    """Training tokens/s over `steps` Adam steps on a throwaway copy of the model."""
    m = copy.deepcopy(model).to(device).train()
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
    ctx = (
        (lambda: torch.autocast(device.type, dtype=torch.bfloat16))
        if amp
        else (lambda: torch.autocast(device.type, enabled=False))
    )
    n, t = 0, 0.0
    for i, b in zip(range(steps + 1), batches):
        b = to_device(b, device)
        t0 = time.time()
        with ctx():
            loss, k = m.loss(b)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if i > 0:  # the first step warms up allocators
            n, t = n + k, t + time.time() - t0
    return round(n / max(t, 1e-9), 1)


def _paragraphs(paragraphs, files, data: dict, seed: int) -> tuple[list, list]:
    """The training and held-out paragraphs: a user's corpus (its first 200,000 lines; the corpora's valid split
    held out), the given `paragraphs` (a tenth of them held out) or the train split of all sources."""
    from .. import corpus, user_text

    if files is not None:
        import itertools

        lines = itertools.islice(user_text.iter_user_lines(files), 200000)
        return [user_text.user_paragraph(ln, i) for i, ln in enumerate(lines)], corpus.load("corpora", "valid")
    if paragraphs is None:
        pars = corpus.load("all", "train")
        if data["paragraphs"]:
            pars = random.Random(seed).sample(pars, min(data["paragraphs"], len(pars)))
        return pars, corpus.load("corpora", "valid")
    return list(paragraphs), list(paragraphs)[: max(1, len(paragraphs) // 10)]


def _model(spec, sents) -> tuple[ElmoConfig, Vocab, Vocab, ElmoLM]:
    """The biLM with its config and word and character vocabularies: the resumed run's, or new ones on `sents`."""
    if spec.resumed is not None:
        cfg_json, vocab_json, sd = spec.resumed
        cfg = ElmoConfig(**cfg_json["config"])
        wv, cv = Vocab.from_json(vocab_json["words"]), Vocab.from_json(vocab_json["chars"])
        model = ElmoLM(cfg)
        checkpoint.load_state_into(model, sd, spec.out)
        return cfg, wv, cv, model
    cfg = ElmoConfig(**spec.plan.model)
    wv, cv = build_vocabs(sents, cfg)
    cfg.n_chars = len(cv)
    cfg.vocab_size = min(cfg.vocab_size, len(wv))
    cfg.cutoffs = [c for c in cfg.cutoffs if c < cfg.vocab_size]
    return cfg, wv, cv, ElmoLM(cfg)


def _benchmark(model: ElmoLM, cfg: ElmoConfig, sents, feat: Featurizer, data: dict, dev, seed: int) -> dict:
    """Training tokens/s of the model, of the same model with a plain full softmax, and with bf16 autocast, for a
    few steps on the same batches."""
    full = ElmoLM(ElmoConfig(**{**asdict(cfg), "softmax": "full"}))
    bench = lambda: iter(BucketBatches(sents, feat, data["batch_tokens"], seed=seed + 1))
    speed = {
        "adaptive_fp32": _speed(model, bench(), data["bench_steps"], dev, False),
        "full_fp32": _speed(full, bench(), data["bench_steps"], dev, False),
        "adaptive_bf16": _speed(model, bench(), data["bench_steps"], dev, True),
        "bench_steps": data["bench_steps"],
        "threads": torch.get_num_threads(),
    }
    log.info("tokens/s %s", speed)
    return speed


def _train_config(p: Preset, o, budget: float, t_start: float, n_valid: int, world: int) -> TrainConfig:
    """The Trainer's settings; the time budget left for training keeps a reserve for the perplexity and saving."""
    reserve = 60.0 + 0.02 * n_valid  # for the perplexity pass and saving
    train_time = max(1.0, budget - (time.time() - t_start) - reserve) if budget else 0.0
    if p.data["batch_tokens"] % world:
        raise ValueError(f"batch_tokens {p.data['batch_tokens']} is not divisible by the {world} processes")
    return TrainConfig(
        steps=p.steps,
        lr=p.lr,
        warmup=p.warmup,
        budget_s=train_time,
        time_limit=o.stretch,
        amp=o.amp or p.amp,
        weight_decay=0.0,
        clip=1.0,
        log_every=50,
        progress=True,
        save_every=o.save_every if p.timeline else 0.0,
    )


def _run_folder(
    spec,
    o,
    rank: int,
    world: int,
    model: ElmoLM,
    cfg: ElmoConfig,
    wv: Vocab,
    cv: Vocab,
    feat: Featurizer,
    vsample,
    summary_extra: Callable,
):
    """The run's folder: checkpoints, resume state and (rank 0, when the preset records one) the timeline, whose
    held-out loss is the mean per-token nll of the two directions on `vsample`."""
    from .run import RunFolder
    from .timeline import Timeline

    def valid_loss() -> float:
        r = perplexity(model, feat, vsample, next(model.parameters()).device)
        return math.log(r["forward"] * r["backward"]) / 2  # mean nll per token of the two directions

    tl = None
    if spec.plan.timeline and o.timeline and rank == 0:
        tl = Timeline(
            "elmo",
            spec.plan.steps,
            model,
            lambda: ElmoEncoder("live", asdict(cfg), {}, None, model, wv, cv),
            valid_loss,
        )
    return RunFolder(
        spec,
        rank,
        world,
        timeline=tl,
        save_checkpoint=lambda summary: checkpoint.save(
            spec.out, "elmo", asdict(cfg), {"words": wv.to_json(), "chars": cv.to_json()}, model.state_dict(), summary
        ),
        summary_extra=summary_extra,
    )


def train(
    preset: Preset | str = "default",
    device: str = "auto",
    out=None,
    seed: int = 0,
    time_limit: float = 0.0,
    callback: Callable | None = None,
    paragraphs=None,
    corpus_path=None,
    **run_options,
) -> Path:
    """Train the biLM on the shared train split and save checkpoints/elmo (or `out`).

    preset: a Preset or the name of one of PRESETS. time_limit (seconds, 0 = the preset's budget) covers the whole
    command: speed benchmark, training and the held-out perplexity; the lr decay follows it. run_options:
    run.RunOptions (resume, stretch, save_every, amp, steps, timeline, init_from). stretch: stop this process after
    so many seconds of training, resumable with `resume=DIR`. Under torchrun each rank trains on its own shard; rank 0 writes.
    `paragraphs` (a list of corpus.Paragraph) replaces the corpus (tests); `corpus_path` (a UTF-8 or GB18030 file
    or folder) trains on a user's text instead, streamed from disk (the vocabularies come from its first
    200,000 lines).
    """
    from .. import user_text
    from .run import RunOptions, RunSpec
    from .trainer import init_distributed

    o = RunOptions(**run_options)
    rank, world = init_distributed(device)
    spec = RunSpec.make("elmo", preset, seed, out, o.resume, corpus_path, o.steps, o.init_from)
    p, seed, d, preset = spec.plan, spec.seed, spec.out, spec.preset
    data = p.data
    t_start = time.time()
    budget = time_limit or p.budget_s
    dev = resolve_device(device)
    torch.manual_seed(seed)
    files = user_text.user_files(spec.corpus_path) if spec.corpus_path is not None else None
    pars, valid_pars = _paragraphs(paragraphs, files, data, seed)
    sents = paragraph_sentences(pars, data["max_len"])
    valid = held_out_sentences(valid_pars, data["max_len"], data["valid_sentences"], seed)
    cfg, wv, cv, model = _model(spec, sents)
    feat = Featurizer(wv, cv, cfg.max_chars, min_width=max(w for w, _ in cfg.filters))
    n_params = sum(q.numel() for q in model.parameters())
    n_words = sum(map(len, sents))
    if rank == 0:
        log.info(
            "ELMo %s: %d sentences, %d words, output vocab %d, %d chars, %.2fM parameters, %d process(es)",
            preset,
            len(sents),
            sum(map(len, sents)),
            len(wv),
            len(cv),
            n_params / 1e6,
            world,
        )
    speed = spec.prev.get("speed_tokens_per_s", {})
    if data["bench_steps"] and spec.resumed is None:
        speed = _benchmark(model, cfg, sents, feat, data, dev, seed)
    tc = _train_config(p, o, budget, t_start, len(valid), world)
    if files is None:
        batches = BucketBatches(sents, feat, data["batch_tokens"] // world, seed=seed, rank=rank, world=world)
    else:
        batches = StreamBatches(
            files, feat, data["batch_tokens"] // world, data["max_len"], seed=seed, rank=rank, world=world
        )
    folder = _run_folder(
        spec,
        o,
        rank,
        world,
        model,
        cfg,
        wv,
        cv,
        feat,
        valid[:300],
        lambda tr: {
            "speed_tokens_per_s": speed,
            "train_sentences": None if files else len(sents),
            "train_words": None if files else n_words,
            "parameters": n_params,
            "epochs": None if files else round(tr.tokens / max(1, n_words + len(sents)), 2),
        },
    )
    trainer = Trainer(model, batches, tc, device=str(dev), callback=callback, state=spec.state, **folder.hooks())
    folder.start()
    summary = trainer.run()
    if summary["finished"] and rank == 0:
        summary["perplexity"] = perplexity(model, feat, valid, dev)
        log.info("held-out perplexity %s", summary["perplexity"])
    summary.update(
        {"preset": preset, "seed": seed, "time_budget_s": budget, "total_wall_s": round(time.time() - t_start, 1)}
    )
    folder.finish(trainer, summary)
    if rank == 0:
        log.info("saved %s", d)
    return d

"""BERT pre-training (MLM + NSP): the presets, `build_model`, `train()` and the held-out pre-training figures.

The model, tokenizer and Encoder are in ctxlib.models.bert; the masked examples and batches in
ctxlib.training.bert_data.
"""

from __future__ import annotations

import functools
import logging
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch

from .. import checkpoint
from ..models.bert import BertConfig, BertModel, CharTokenizer
from ..models.bert_encoder import BertEncoder
from ..vocab import Vocab
from .presets import Preset, named

log = logging.getLogger(__name__)


PRESETS: dict[str, Preset] = named(
    {
        # tests: a few seconds on a slice of the corpus
        "tiny": Preset(
            model=dict(hidden=32, layers=2, heads=2, ffn=64, max_len=64),
            steps=60,
            lr=3e-3,
            warmup=5,
            timeline=False,
            data=dict(batch=16, max_paragraphs=400, min_count=1, whole_word=False),
        ),
        # the previous shipped model: 107 min of training on one CPU thread, bf16 autocast (2x fp32 on this CPU); the
        # learning-rate decay follows whichever runs out first, steps or the time budget
        # (no dropout: chosen when the budget gave ~5 passes, keeps the fused attention path on)
        "default": Preset(
            model=dict(hidden=256, layers=4, heads=4, ffn=1024, max_len=128, dropout=0.0, attn_dropout=0.0),
            steps=20000,
            lr=1e-3,
            warmup=100,
            budget_s=6400.0,
            amp="auto",
            data=dict(batch=32, max_paragraphs=None, min_count=2, whole_word=False),
        ),
        # the long run (models issue): same size, rotary (relative) positions, a step schedule (no time budget) so it
        # can run in stretches with --resume; ~6 h on one CPU thread. Whole-word masking in half of the examples:
        # the first 6,370 steps used it in all of them and the model could not fill one hidden character of a word
        # (cloze top-1 0.02), so the run went on with this mix from there.
        "long": Preset(
            model=dict(
                hidden=256, layers=4, heads=4, ffn=1024, max_len=128, dropout=0.0, attn_dropout=0.0, positions="rope"
            ),
            steps=28000,
            lr=1e-3,
            warmup=500,
            budget_s=0.0,
            amp="auto",
            data=dict(batch=32, max_paragraphs=None, min_count=2, whole_word=0.5),
        ),
        # the width lever (models issue): `long` at 384 wide (6 heads of 64, ffn 4x), everything else the same; 9.6 M
        # parameters, 18 MiB as fp16, about twice the compute per token. For a GPU or a measured pilot (--steps). lr 5e-4:
        # in a 4,000-step CPU pilot lr 1e-3 (long's) lagged long's held-out loss (step 1,223: 6.451 vs 6.066), 5e-4 kept
        # level with it (6.042; 5.341 vs 5.299 at step 2,212).
        "wide": Preset(
            model=dict(
                hidden=384, layers=4, heads=6, ffn=1536, max_len=128, dropout=0.0, attn_dropout=0.0, positions="rope"
            ),
            steps=52000,
            lr=5e-4,
            warmup=500,
            budget_s=0.0,
            amp="auto",
            data=dict(batch=32, max_paragraphs=None, min_count=2, whole_word=0.5),
        ),
    }
)


def _set_seed(seed: int):
    torch.manual_seed(seed)
    np.random.seed(seed)


def build_model(tok: CharTokenizer, model_kw: dict, seed: int = 0) -> BertModel:
    _set_seed(seed)
    return BertModel(BertConfig(vocab_size=len(tok), **model_kw))


@torch.no_grad()
def evaluate_pretraining(
    model: BertModel, tok: CharTokenizer, paragraphs, n: int = 1000, batch: int = 64, seed: int = 1234
) -> dict:
    """Held-out MLM top-1 / top-5 accuracy (on all chosen positions) and NSP accuracy, on fixed examples."""
    from .bert_data import Documents, collate, make_example

    docs = Documents(paragraphs, tok)
    rng = np.random.default_rng(seed)
    exs = [make_example(rng, tok, docs, max_len=model.cfg.max_len) for _ in range(n)]
    dev = next(model.parameters()).device
    was = model.training
    model.eval()
    c1 = c5 = tot = nsp_ok = 0
    for i in range(0, n, batch):
        b = {k: v.to(dev) for k, v in collate(exs[i : i + batch]).items()}
        (h,), _ = model(b["ids"], b["segment_ids"])
        hm = h.reshape(-1, h.size(-1)).index_select(0, b["mlm_pos"])
        top = model.mlm_logits(hm).topk(5, -1).indices  # (N, 5)
        lab = b["mlm_labels"][:, None]
        c1 += int((top[:, :1] == lab).sum())
        c5 += int((top == lab).any(-1).sum())
        tot += len(lab)
        nsp_ok += int((model.nsp_logits(h[:, 0]).argmax(-1) == b["nsp"]).sum())
    model.train(was)
    return {
        "mlm_top1": round(c1 / max(tot, 1), 4),
        "mlm_top5": round(c5 / max(tot, 1), 4),
        "nsp_acc": round(nsp_ok / n, 4),
        "n_examples": n,
        "n_masked": tot,
    }


def train_paragraphs(max_paragraphs: int | None, seed: int) -> list:
    """The train split of all sources, or a random sample of `max_paragraphs` of its paragraphs (in corpus order)."""
    from .. import corpus

    paragraphs = corpus.load("all", "train")
    if max_paragraphs:
        rng = np.random.default_rng(seed)
        paragraphs = [paragraphs[i] for i in sorted(rng.permutation(len(paragraphs))[:max_paragraphs])]
    return paragraphs


def resumed_model(spec) -> tuple[CharTokenizer, BertModel]:
    """The tokenizer and network of the run being resumed (`spec.resumed`), its weights loaded (BERT and GPT)."""
    cfg_json, vocab_json, sd = spec.resumed
    tok = CharTokenizer(Vocab.from_json(vocab_json))
    model = BertModel(BertConfig(**cfg_json["config"]))
    checkpoint.load_state_into(model, sd, spec.out)
    return tok, model


def train_config(plan: Preset, o, time_limit: float):
    """The Trainer's settings of a BERT or GPT run: the preset's schedule and budget (or `time_limit`), the run
    options' AMP and stretch, and saving every `o.save_every` s when the preset records a timeline."""
    from .trainer import TrainConfig

    return TrainConfig(
        steps=plan.steps,
        lr=plan.lr,
        warmup=plan.warmup,
        amp=o.amp or plan.amp,
        budget_s=time_limit or plan.budget_s,
        time_limit=o.stretch,
        save_every=o.save_every if plan.timeline else 0.0,
        log_every=max(1, min(200, plan.steps // 50)),
    )


def _batches(paragraphs, files, tok: CharTokenizer, model: BertModel, data: dict, seed: int, rank: int, world: int):
    """(documents, batches): this rank's masked pre-training batches from `paragraphs`, or streamed from a user's
    `files` (documents None)."""
    from .bert_batches import PretrainBatches, StreamPretrainBatches
    from .bert_data import Documents

    if data["batch"] % world:
        raise ValueError(f"batch {data['batch']} is not divisible by the {world} processes")
    ww, bs = data["whole_word"], data["batch"] // world
    if files is None:
        docs = Documents(paragraphs, tok)
        return docs, PretrainBatches(docs, bs, model.cfg.max_len, seed=seed, whole_word=ww, rank=rank, world=world)
    return None, StreamPretrainBatches(
        files, tok, bs, model.cfg.max_len, seed=seed, whole_word=ww, rank=rank, world=world
    )


def _run_folder(spec, o, rank: int, world: int, model: BertModel, tok: CharTokenizer, docs):
    """The run's folder: checkpoints, resume state and (rank 0, when the preset records one) the timeline."""
    from .run import RunFolder
    from .timeline import Timeline

    tl = None
    if spec.plan.timeline and o.timeline and rank == 0:
        n_valid = spec.plan.data.get("timeline_valid", VALID_EXAMPLES)
        valid_loss = _valid_loss_fn(model, tok, _valid_paragraphs(n_valid), n=n_valid)
        tl = Timeline(
            "bert",
            spec.plan.steps,
            model,
            lambda: BertEncoder("live", asdict(model.cfg), {}, None, model, tok),
            valid_loss,
        )
    batch = spec.plan.data["batch"]
    return RunFolder(
        spec,
        rank,
        world,
        timeline=tl,
        save_checkpoint=lambda summary: checkpoint.save(
            spec.out, "bert", model.cfg.to_json(), tok.vocab.to_json(), model.state_dict(), summary, half=True
        ),
        summary_extra=lambda tr: {"epochs": round(tr.step * batch / max(1, len(docs.a_docs)), 3) if docs else None},
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
    """Pre-train with MLM + NSP on the train split of all sources and save a checkpoint (default checkpoints/bert).

    preset: a Preset or the name of one of PRESETS. time_limit: a time budget that the lr decay follows (0 = the
    preset's). run_options: run.RunOptions (resume, stretch, save_every, amp, steps, timeline, init_from). stretch:
    stop this process after so many seconds, resumable with `resume=DIR` (the run's folder), which continues exactly
    where it stopped.
    Under torchrun each rank trains on its own shard; only rank 0 writes. The folder is a loadable checkpoint
    at every save (every `save_every` s), with resume.pt and the timeline beside it. `corpus_path` (a UTF-8 or
    GB18030 file or folder) trains on a user's text instead, streamed from disk."""
    from .. import corpus, user_text
    from .run import RunOptions, RunSpec
    from .trainer import Trainer, init_distributed

    o = RunOptions(**run_options)
    rank, world = init_distributed(device)
    spec = RunSpec.make("bert", preset, seed, out, o.resume, corpus_path, o.steps, o.init_from)
    P, seed, out = spec.plan, spec.seed, spec.out
    data = P.data
    t0 = time.time()
    files = user_text.user_files(spec.corpus_path) if spec.corpus_path is not None else None
    if paragraphs is None and files is None:
        paragraphs = train_paragraphs(data["max_paragraphs"], seed)
    if spec.resumed is not None:
        tok, model = resumed_model(spec)
    else:
        source = (
            paragraphs
            if files is None
            else (user_text.user_paragraph(ln, i, words=False) for i, ln in enumerate(user_text.iter_user_lines(files)))
        )
        tok = CharTokenizer.build(source, min_count=data["min_count"])
        model = build_model(tok, P.model, seed)
    docs, batches = _batches(paragraphs, files, tok, model, data, seed, rank, world)
    tc = train_config(P, o, time_limit)
    if rank == 0:
        log.info(
            "BERT %s: %d params, vocab %d, %d documents, preset %s, %d process(es)%s",
            asdict(model.cfg),
            sum(p.numel() for p in model.parameters()),
            len(tok),
            len(docs) if docs else -1,
            spec.preset,
            world,
            f", resuming {out} at step {spec.state['step']}" if spec.state else "",
        )
    folder = _run_folder(spec, o, rank, world, model, tok, docs)
    trainer = Trainer(model, batches, tc, device, callback, state=spec.state, **folder.hooks())
    folder.start()
    summary = trainer.run()
    model = model.float()
    if summary["finished"] and spec.preset != "tiny" and rank == 0:
        summary["valid"] = evaluate_pretraining(model, tok, corpus.load("corpora", "valid"), n=2000)
        log.info("held-out: %s", summary["valid"])
    summary.update(total_wall_s=round(time.time() - t0, 1), preset=spec.preset, seed=seed)
    folder.finish(trainer, summary)
    return out


VALID_EXAMPLES = 256  # held-out examples of the timeline's loss (a preset's data["timeline_valid"] can ask for fewer)


def _valid_paragraphs(n: int) -> list:
    """The paragraphs the timeline's held-out loss draws its `n` examples from: the valid split of the corpora; for
    fewer than VALID_EXAMPLES (the training page's live runs) a fixed sample of 8n of them, so that a run tokenises
    what it uses rather than the whole split (3,659 paragraphs: ~10 s on a busy CPU before the first step)."""
    from .. import corpus

    if n >= VALID_EXAMPLES:
        return corpus.load("corpora", "valid")
    return list(valid_sample(8 * n))


@functools.lru_cache(maxsize=2)
def valid_sample(k: int, seed: int = 4321) -> tuple:
    from .. import corpus

    pars = corpus.load("corpora", "valid")
    return tuple(pars[i] for i in sorted(np.random.default_rng(seed).permutation(len(pars))[:k]))


def _valid_loss_fn(model: BertModel, tok: CharTokenizer, paragraphs, n: int = VALID_EXAMPLES, seed: int = 4321):
    """Held-out MLM + NSP loss on n fixed examples (the timeline's held-out curve)."""
    from .bert_data import Documents, collate, make_example

    docs = Documents(paragraphs, tok)
    rng = np.random.default_rng(seed)
    exs = [make_example(rng, tok, docs, max_len=model.cfg.max_len) for _ in range(n)]
    exs.sort(key=lambda e: len(e["ids"]))
    batches = [collate(exs[i : i + 64]) for i in range(0, n, 64)]

    @torch.no_grad()
    def fn() -> float:
        dev = next(model.parameters()).device
        tot = 0.0
        for b in batches:
            loss, _ = model.loss({k: v.to(dev) for k, v in b.items()})
            tot += float(loss)
        return tot / len(batches)

    return fn

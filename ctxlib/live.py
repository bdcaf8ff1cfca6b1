"""Training a small model live (the training page's "Train live"), without Streamlit: the choices of a run, the
checks of an uploaded corpus, and the run's work function for a background job. The session folders that hold the
runs, their cleanup and the download zip are in ctxlib.live_files.

- `LiveSpec`: what to train (word2vec, or a small ELMo, BERT or GPT), on what (a random subset of the built-in train
  split, `words` words; or a user's file checked as `--corpus` checks it, see `check_upload`) and for how long
  (`budget_s`, 30-180 s of training; loading the text and the timeline's snapshots come on top).
- `train(spec, out, report)`: runs the model's own `train()` (ctxlib.training.*) into `out` with the run's preset
  (PRESETS[kind], named "live-<run id>"), calling `report(fraction of the budget, {"s", "step", "loss", "tokens",
  "tokens_s"}, phase)` at most every `REPORT_EVERY_S` seconds (a job's `report`: raising from it, e.g.
  jobs.Cancelled, ends the run). ELMo, BERT and GPT record a training timeline (replayed by the same views as the
  shipped models') and save the folder every `SAVE_EVERY_S` seconds (no resume.pt: a live run is never resumed), so a
  cancelled run keeps its last save; a cancelled word2vec stops where it is and saves the vectors trained so far.
- `make_work(session, spec)`: the job's work, a new run in a live_files.LiveSession.

What a finished run shows (the heads that formed, word2vec's nearest words) is in ctxlib.live_results.
"""

from __future__ import annotations

import functools
import itertools
import logging
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

import numpy as np

from . import checkpoint, kinds
from .training.presets import Preset

log = logging.getLogger(__name__)

BUDGET_MIN_S, BUDGET_MAX_S = 30, 180
SUBSETS = (50_000, 200_000, 1_000_000)  # words of the built-in train split a run can use
REPORT_EVERY_S = 0.5  # at most one progress report (and plot point) per this many seconds
SAVE_EVERY_S = 5.0  # ELMo, BERT, GPT: the run folder is saved (weights + timeline) this often
EXAMPLE_WORDS = ("中国", "发展", "经济")  # common words whose nearest neighbours a live word2vec shows

# the live models' sizes: the tests' tiny models, a little wider, with a timeline; `steps` is planned per run from
# the budget (STEPS_PER_S, measured on one CPU thread; the time budget ends the run, the plan only spaces the
# timeline's snapshots and the learning-rate decay).
# BERT: batches of 64 inputs of at most 32 characters, peak lr 3e-3 (50 warm-up steps), rotary positions, 2 layers
# with 2 heads of 32, and on the built-in subset its ~1,200 most frequent characters (VOCAB_TOP; the rest [UNK]:
# 5.8-6.2% of the characters of the 50k, 200k and 1M-word subsets; the top 800 would leave 12%). Chosen with
# bench/live_heads.py (one recipe per command, one JSON line) by the share of the strongest previous- or
# next-character head (mean over the timeline's two fixed attention sentences; even attention ~0.06; a head "forms"
# at >= 0.5, live_results.FORMED_SHARE) within the budget. 200k-word subset, seed 0, --steps N (the schedule planned for N);
# end shares prev/next (the step where one first reached 0.5), train/held-out loss (MLM + NSP, nats):
#   16 x 64 chars, lr 1e-2, 3,316 chars (the last preset), 2,400 steps: 0.21/0.11 (prev 0.72 at step 600, gone by
#     1,000: the heads flicker while the loss stays on the unigram plateau), 7.24/7.36
#   64 x 32, lr 1e-2, 3,316 chars, 2,400: 0.24/0.24, 6.60/6.84      ... lr 5e-3, 2,000: 0.21/0.25, 5.40/6.00
#   64 x 32, lr 3e-3, 3,316 chars, 2,400: 0.42/0.45 (0.39/0.43 at 2,000), 4.93/5.75   ... lr 2e-3, 2,000: 0.30/0.30
#   the same at 2,000 steps with 4 heads of 16: 0.33/0.28, 5.11/5.81; with 1,921 chars (min_count 10): 0.39/0.51
#     (next 0.51 at 2,000), 4.99/5.53; with 1,921 chars and 1 layer: 0.14/0.28, 5.50/6.04
#   with 1,223 chars (min_count 30, as VOCAB_TOP 1,200), 2,000: 0.33/0.60 (next 0.51 at 1,500), 4.85/5.41;
#     seed 1: 0.53/0.51 (prev 0.51 at 1,750), 4.83/5.42;  MLM only (no NSP; not a preset field): 0.23/0.32,
#     4.39/4.77 (MLM alone); masking 30% (not a preset field): 0.32/0.45, 4.99/5.04
#   with 642 chars (min_count 100; 16% [UNK]), 2,000: 0.59/0.62 (0.54 at 1,250), 4.35/5.00: faster, too many [UNK]
# Time: 64 x 32 steps cost ~45 ms of one free core (2,400 steps with 3,316 characters: 107 s of CPU with the machine
# lightly loaded), so the ~2,000 steps a head needs take ~90 s: the page's default budget (live_views). On this
# 2-core machine loaded by other jobs (load 4-5) a step took 55-75 ms of CPU and wall time stretched further: the
# page's own run (--budget) made 1,260 steps in 90 s (end 0.18/0.16, held-out 5.95) and 660 in 60 s (0.09/0.10),
# and the page then says that no head has formed yet (live_views.heads_view); a 180 s run on the page, the load lighter
# by then, made 3,231 steps: the previous-character head passed 0.5 at the snapshot of step 1,582 and ended at 0.60
# (next 0.59), loss 4.48/5.12 (and a 90 s page run at load ~5: 1,127 steps, 0.13/0.12).
PRESETS: dict[str, Preset] = {
    "word2vec": Preset(
        model=dict(sg=True, dim=64, window=5, negative=5, sample=1e-3, min_count=3, epochs=5, max_vocab=20000),
        data=dict(sentences=None),
    ),
    "bert": Preset(
        model=dict(hidden=64, layers=2, heads=2, ffn=128, max_len=32, dropout=0.0, attn_dropout=0.0, positions="rope"),
        steps=1000,
        lr=3e-3,
        warmup=50,
        amp="off",
        timeline=True,
        resume_file=False,
        data=dict(batch=64, max_paragraphs=None, min_count=2, whole_word=False, timeline_valid=64),
    ),
    "gpt": Preset(
        model=dict(hidden=64, layers=2, heads=2, ffn=128, max_len=64, dropout=0.0, attn_dropout=0.0),
        steps=1000,
        lr=3e-3,
        warmup=20,
        amp="off",
        timeline=True,
        resume_file=False,
        data=dict(batch=16, max_paragraphs=None, min_count=2, valid_chars=20000, timeline_valid=64),
    ),
    "elmo": Preset(
        model=dict(
            filters=[[1, 16], [2, 16], [3, 32]],
            max_chars=6,
            dim=32,
            hidden=64,
            vocab_size=3000,
            cutoffs=[300, 1500],
            dropout=0.0,
        ),
        steps=1000,
        lr=3e-3,
        warmup=10,
        amp="off",
        timeline=True,
        resume_file=False,
        data=dict(paragraphs=0, batch_tokens=400, max_len=30, bench_steps=0, valid_sentences=100),
    ),
}
STEPS_PER_S = {"bert": 30.0, "gpt": 25.0, "elmo": 15.0}  # a generous guess: the plan should outlast the budget
VOCAB_TOP = {"bert": 1200}  # on the built-in subset: the most frequent characters kept (the rest [UNK]); see PRESETS
_RUN_IDS = itertools.count(1)


class UploadError(ValueError):
    """An uploaded corpus that `--corpus` would refuse; `.code` names the case (empty, binary, encoding, too_big)."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class LiveSpec:
    kind: str
    budget_s: float = 60.0
    words: int = 200_000  # size of the built-in subset (ignored with corpus_file)
    corpus_file: Path | None = None  # a user's file, already checked (check_upload + save_upload)
    seed: int = 0

    def __post_init__(self):
        if self.kind not in kinds.names(live=True):
            raise ValueError(f"unknown model {self.kind!r}; choose one of {list(kinds.names(live=True))}")
        if not BUDGET_MIN_S <= self.budget_s <= BUDGET_MAX_S:
            raise ValueError(f"the time budget must be {BUDGET_MIN_S}-{BUDGET_MAX_S} s, not {self.budget_s}")
        if self.corpus_file is not None and self.kind not in kinds.names(uploadable=True):
            raise ValueError(f"{self.kind} trains on the built-in corpus only")
        if self.corpus_file is None and self.words <= 0:
            raise ValueError("the subset needs a positive number of words")


# -- uploads: the limits and messages of `python -m ctxlib train KIND --corpus FILE` ------------------------------
def check_upload(data: bytes, name: str = "upload") -> str:
    """The encoding ('utf-8-sig' or 'gb18030') of an uploaded corpus, or UploadError as --corpus would refuse it."""
    from .corpus import CorpusError
    from .user_text import USER_FILE_CAP, decode_with_encoding

    if len(data) > USER_FILE_CAP:
        raise UploadError(
            "too_big",
            f"{name}: {len(data) / 1e6:.1f} MB is over the {USER_FILE_CAP // (1024 * 1024)} MB "
            "cap; split the file or use a sample.",
        )
    try:
        return decode_with_encoding(data, name)[1]
    except CorpusError as e:
        raise UploadError(e.code, str(e)) from e


def save_upload(data: bytes, folder: Path, name: str = "upload") -> Path:
    """Check an upload (check_upload), write it under `folder` and check the file as --corpus does; its path."""
    from .corpus import CorpusError
    from .user_text import user_files

    check_upload(data, name)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "corpus.txt"
    path.write_bytes(data)
    try:
        user_files(path)
    except CorpusError as e:
        path.unlink(missing_ok=True)
        raise UploadError("binary", str(e).replace(str(path), name)) from e
    return path


# -- the built-in subset ---------------------------------------------------------------------------------------
def subset(words: int, seed: int = 0) -> list:
    """Paragraphs of the built-in train split in a seeded random order until they hold at least `words` words
    (kept for the process: the page's few sizes are asked again and again)."""
    return list(_subset(int(words), int(seed)))


@functools.lru_cache(maxsize=len(SUBSETS))
def _subset(words: int, seed: int) -> tuple:
    from . import corpus

    pars = corpus.load("all", "train")
    out, n = [], 0
    for i in np.random.default_rng(seed).permutation(len(pars)):
        out.append(pars[int(i)])
        n += len(pars[int(i)].words)
        if n >= words:
            break
    return tuple(out)


# -- one run -----------------------------------------------------------------------------------------------------
@dataclass
class LiveRun:
    """A run's record, filled as it goes (the page keeps it in the session): its folder, state and last figures."""

    spec: LiveSpec
    out: Path
    id: int = field(default_factory=lambda: next(_RUN_IDS))
    started: float = field(default_factory=time.time)
    ended: float | None = None
    state: str = "running"  # running, done, cancelled, failed
    first_step_s: float | None = None  # seconds from the start to the first training step (loading, vocabulary)
    summary: dict = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.spec.kind}-{self.id}"

    def loadable(self) -> bool:
        """Whether the folder holds a complete checkpoint (a cancelled run: its last save, if any)."""
        return all((self.out / f).is_file() for f in ("config.json", "vocab.json", "model.pt"))

    def has_timeline(self) -> bool:
        return (self.out / "timeline.json").is_file() and (self.out / "timeline.npz").is_file()


def top_k_min_count(paragraphs, k: int) -> int:
    """The min_count that keeps about the `k` most frequent characters of `paragraphs` (as CharTokenizer.build counts
    them; characters tied with the k-th are kept too): the k-th largest count."""
    from collections import Counter

    from .tokens import char_tokens, norm_token

    c = Counter(norm_token(t) for p in paragraphs for t, _, _ in char_tokens(p.text))
    counts = sorted(c.values(), reverse=True)
    return counts[k - 1] if len(counts) >= k else 1


def plan_steps(kind: str, budget_s: float) -> int:
    """Optimizer steps planned for a run of `budget_s` seconds (more than it will make: the budget ends it)."""
    return max(100, int(budget_s * STEPS_PER_S[kind]))


class _Progress:
    """A run's progress reports (see the module docstring): `__call__` reports a point at most every REPORT_EVERY_S
    seconds (True when it did) and otherwise only checks for a cancel; it times the first step."""

    def __init__(self, run: LiveRun, budget: float, report: Callable[..., None]):
        self.run, self.budget, self.report = run, budget, report
        self.t0, self.last = time.time(), 0.0

    def __call__(
        self, step: int, loss: float | None, tokens: int, elapsed: float, words_total: float | None = None
    ) -> bool:
        if self.run.first_step_s is None:
            self.run.first_step_s = round(time.time() - self.t0, 1)
        now = time.time()
        frac = (
            elapsed / self.budget if words_total is None else max(elapsed / self.budget, tokens / max(words_total, 1))
        )
        if now - self.last < REPORT_EVERY_S:
            self.report(min(1.0, frac), None, "train")  # checks for a cancel without a new point
            return False
        self.last = now
        self.report(
            min(1.0, frac),
            {
                "s": round(elapsed, 2),
                "step": int(step),
                "loss": None if loss is None else round(float(loss), 4),
                "tokens": int(tokens),
                "tokens_s": round(tokens / max(elapsed, 1e-9), 1),
            },
            "train",
        )
        return True


def train(spec: LiveSpec, run: LiveRun, report: Callable[..., None]) -> LiveRun:
    """Train `spec` into run.out; see the module docstring for `report`. Returns `run` (state, summary filled)."""
    mod = kinds.training_module(spec.kind)
    emit = _Progress(run, float(spec.budget_s), report)
    report(0.0, None, "data")
    corpus_path = str(spec.corpus_file) if spec.corpus_file is not None else None
    try:
        if spec.kind == "word2vec":
            cancelled = _train_word2vec(mod, spec, run, emit, corpus_path)
        else:
            _train_steps(mod, spec, run, emit, corpus_path)
            cancelled = None
        if cancelled is not None:  # word2vec saved what it had: the run ends as cancelled, with a loadable model
            run.summary = checkpoint.read_config(run.out).get("summary", {})
            raise cancelled
        report(1.0, None, "save")
    except BaseException:
        run.ended = time.time()
        raise
    run.ended = time.time()
    run.summary = checkpoint.read_config(run.out).get("summary", {})
    run.state = "done"
    return run


def _word2vec_callback(emit: _Progress, cancelled: list) -> Callable[[dict], bool | None]:
    """word2vec.fit's callback: a point of the mean loss since the last one; True (stop) once the job is cancelled,
    the Cancelled kept in `cancelled` (fit then stops and the vectors so far are saved)."""
    t_fit, seen = [None], [0.0, 0]

    def cb(info: dict):
        if cancelled:
            return True
        if t_fit[0] is None:
            t_fit[0] = time.time() - info["words"] / max(info["words_per_s"], 1e-9)
        s, n = info.get("loss_sum", 0.0), info.get("loss_n", 0)
        if n < seen[1]:  # a new epoch: its sums start again
            seen[:] = [0.0, 0]
        loss = (s - seen[0]) / (n - seen[1]) if n > seen[1] else None  # the mean since the last point
        try:
            if emit(info.get("steps", 0), loss, info["words"], time.time() - t_fit[0], info["total"]):
                seen[:] = [s, n]
        except BaseException as e:  # a cancel: word2vec.fit stops here and the vectors so far are saved
            if type(e).__name__ != "Cancelled":
                raise
            cancelled.append(e)
            return True

    return cb


def _train_word2vec(
    mod, spec: LiveSpec, run: LiveRun, emit: _Progress, corpus_path: str | None
) -> BaseException | None:
    """word2vec into run.out (it trains in one go, saving at the end); the job's Cancelled when it was cancelled."""
    cancelled: list[BaseException] = []
    try:
        mod.train(
            replace(PRESETS["word2vec"], name=f"live-{run.id}"),
            device="cpu",
            out=run.out,
            seed=spec.seed,
            time_limit=emit.budget,
            callback=_word2vec_callback(emit, cancelled),
            paragraphs=None if corpus_path else subset(spec.words, spec.seed),
            corpus_path=corpus_path,
        )
    finally:
        if corpus_path:  # an upload's segmented copy (user_text.UserSentences) goes with the session, not to the cache
            from .user_text import UserSentences, user_files

            UserSentences(user_files(corpus_path)).path.unlink(missing_ok=True)
    return cancelled[0] if cancelled else None


def _train_steps(mod, spec: LiveSpec, run: LiveRun, emit: _Progress, corpus_path: str | None) -> None:
    """ELMo, BERT or GPT into run.out: the live preset with its steps planned from the budget and its data fitted to
    the subset, stopped by the budget (`stretch`), saving every SAVE_EVERY_S seconds."""
    budget = emit.budget
    P = PRESETS[spec.kind]
    data = dict(P.data)
    paragraphs = None
    if corpus_path is None:
        if spec.kind == "elmo":  # ELMo holds out part of `paragraphs`: a sample of the split keeps its own valid
            data["paragraphs"] = len(subset(spec.words, spec.seed))
        else:
            paragraphs = subset(spec.words, spec.seed)
            if spec.kind in VOCAB_TOP:
                data["min_count"] = max(data["min_count"], top_k_min_count(paragraphs, VOCAB_TOP[spec.kind]))
    preset = replace(P, steps=plan_steps(spec.kind, budget), data=data, name=f"live-{run.id}")

    def cb(step: int, ema: float, info: dict):
        emit(step, ema, info["tokens"], info["elapsed"])

    kw = dict(device="cpu", out=run.out, seed=spec.seed, callback=cb, stretch=budget, save_every=SAVE_EVERY_S)
    if spec.kind == "elmo":  # its time_limit covers the whole command and keeps ~60 s for the perplexity
        kw.update(time_limit=budget + 60.0 + 0.02 * data["valid_sentences"], corpus_path=corpus_path)
    else:
        kw.update(time_limit=budget, paragraphs=paragraphs)
        if spec.kind == "bert":
            kw["corpus_path"] = corpus_path
    mod.train(preset, **kw)


def make_work(session, spec: LiveSpec) -> Callable:  # session: a live_files.LiveSession (which imports this module)
    """The job's work: a new run in the session's folder, trained with the job's `report`."""

    def work(job) -> LiveRun:
        run = session.new_run(spec)
        try:
            return train(spec, run, job.report)
        except BaseException as e:
            run.state = "cancelled" if type(e).__name__ == "Cancelled" else "failed"
            raise

    return work

"""Training a small model live (the training page's "Train live"), without Streamlit: the choices of a run, its work
function for a background job, the per-session folder that holds runs, and the zip a run downloads as.

- `LiveSpec`: what to train (word2vec, or a small ELMo, BERT or GPT), on what (a random subset of the built-in train
  split, `words` words; or a user's file checked as `--corpus` checks it, see `check_upload`) and for how long
  (`budget_s`, 30-180 s of training; loading the text and the timeline's snapshots come on top).
- `train(spec, out, report)`: runs the model's own `train()` (ctxlib.training.*) into `out`, calling
  `report(fraction of the budget, {"s", "step", "loss", "tokens", "tokens_s"}, phase)` at most every
  `REPORT_EVERY_S` seconds (a job's `report`: raising from it, e.g. jobs.Cancelled, ends the run). ELMo, BERT and GPT
  record a training timeline (replayed by the same views as the shipped models') and save the folder every
  `SAVE_EVERY_S` seconds (no resume.pt: a live run is never resumed), so a cancelled run keeps its last save; a
  cancelled word2vec stops where it is and saves the vectors trained so far.
- `LiveSession`: a temporary folder per app session with its last `MAX_RUNS` runs (older ones deleted; all of it
  when the session object is dropped). Nothing is written to checkpoints/. The folder names its owning process
  (`OWNER_FILE`); `clean_stale` removes the folders of processes that are gone (a crashed or killed server), once
  they are `STALE_H` hours old: a new session runs it (at most every `CLEAN_EVERY_S` seconds per process).
- `zip_bytes(folder)`: the checkpoint as a zip that `ctxlib.load("run.zip")` reads (checkpoint.py unpacks it).
"""
from __future__ import annotations

import functools
import itertools
import json
import logging
import os
import shutil
import tempfile
import threading
import time
import weakref
import zipfile
from contextlib import contextmanager
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
MAX_RUNS = 2  # runs a session keeps on disk (the older ones are deleted)
ZIP_FILES = checkpoint.ZIP_MEMBERS  # what a downloaded run holds (no resume.pt: it holds pickled optimizer state)
EXAMPLE_WORDS = ("中国", "发展", "经济")  # common words whose nearest neighbours a live word2vec shows
FOLDER_PREFIX = "ctxlab-live-"  # a session's temporary folder: <tempdir>/ctxlab-live-XXXX
OWNER_FILE = "owner.json"  # in it: {"pid", "start" (the process's start, to tell a reused pid), "created"}
STALE_H = float(os.environ.get("CTXLAB_LIVE_STALE_H", "6"))  # age before a folder whose process is gone is removed
CLEAN_EVERY_S = 600.0

# the live models' sizes: the tests' tiny models, a little wider, with a timeline; `steps` is planned per run from
# the budget (STEPS_PER_S, measured on one CPU thread; the time budget ends the run, the plan only spaces the
# timeline's snapshots and the learning-rate decay).
# BERT: batches of 64 inputs of at most 32 characters, peak lr 3e-3 (50 warm-up steps), rotary positions, 2 layers
# with 2 heads of 32, and on the built-in subset its ~1,200 most frequent characters (VOCAB_TOP; the rest [UNK]:
# 5.8-6.2% of the characters of the 50k, 200k and 1M-word subsets; the top 800 would leave 12%). Chosen with
# bench/live_heads.py (one recipe per command, one JSON line) by the share of the strongest previous- or
# next-character head (mean over the timeline's two fixed attention sentences; even attention ~0.06; a head "forms"
# at >= 0.5, live.FORMED_SHARE) within the budget. 200k-word subset, seed 0, --steps N (the schedule planned for N);
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
    "word2vec": Preset(model=dict(sg=True, dim=64, window=5, negative=5, sample=1e-3, min_count=3, epochs=5,
                                  max_vocab=20000), data=dict(sentences=None)),
    "bert": Preset(model=dict(hidden=64, layers=2, heads=2, ffn=128, max_len=32, dropout=0.0, attn_dropout=0.0,
                              positions="rope"),
                   steps=1000, lr=3e-3, warmup=50, amp="off", timeline=True, resume_file=False,
                   data=dict(batch=64, max_paragraphs=None, min_count=2, whole_word=False, timeline_valid=64)),
    "gpt": Preset(model=dict(hidden=64, layers=2, heads=2, ffn=128, max_len=64, dropout=0.0, attn_dropout=0.0),
                  steps=1000, lr=3e-3, warmup=20, amp="off", timeline=True, resume_file=False,
                  data=dict(batch=16, max_paragraphs=None, min_count=2, valid_chars=20000, timeline_valid=64)),
    "elmo": Preset(model=dict(filters=[[1, 16], [2, 16], [3, 32]], max_chars=6, dim=32, hidden=64, vocab_size=3000,
                              cutoffs=[300, 1500], dropout=0.0),
                   steps=1000, lr=3e-3, warmup=10, amp="off", timeline=True, resume_file=False,
                   data=dict(paragraphs=0, batch_tokens=400, max_len=30, bench_steps=0, valid_sentences=100)),
}
STEPS_PER_S = {"bert": 30.0, "gpt": 25.0, "elmo": 15.0}  # a generous guess: the plan should outlast the budget
VOCAB_TOP = {"bert": 1200}  # on the built-in subset: the most frequent characters kept (the rest [UNK]); see PRESETS
_RUN_IDS = itertools.count(1)
_PRESET_LOCK = threading.Lock()


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
        raise UploadError("too_big", f"{name}: {len(data) / 1e6:.1f} MB is over the {USER_FILE_CAP // (1024 * 1024)} MB "
                                     "cap; split the file or use a sample.")
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


@contextmanager
def _registered(module, name: str, preset: Preset):
    """`preset` as module.PRESETS[name] while the run lasts: the models' train() take a preset by name."""
    with _PRESET_LOCK:
        module.PRESETS[name] = preset
    try:
        yield name
    finally:
        with _PRESET_LOCK:
            module.PRESETS.pop(name, None)


def train(spec: LiveSpec, run: LiveRun, report: Callable[..., None]) -> LiveRun:
    """Train `spec` into run.out; see the module docstring for `report`. Returns `run` (state, summary filled)."""
    mod = kinds.training_module(spec.kind)
    out, budget = run.out, float(spec.budget_s)
    t0 = time.time()
    last = [0.0]
    report(0.0, None, "data")

    def emit(step: int, loss: float | None, tokens: int, elapsed: float, words_total: float | None = None):
        if run.first_step_s is None:
            run.first_step_s = round(time.time() - t0, 1)
        now = time.time()
        frac = elapsed / budget if words_total is None else max(elapsed / budget, tokens / max(words_total, 1))
        if now - last[0] < REPORT_EVERY_S:
            report(min(1.0, frac), None, "train")  # checks for a cancel without a new point
            return False
        last[0] = now
        report(min(1.0, frac), {"s": round(elapsed, 2), "step": int(step), "loss": None if loss is None else round(float(loss), 4),
                                "tokens": int(tokens), "tokens_s": round(tokens / max(elapsed, 1e-9), 1)}, "train")
        return True

    corpus_path = str(spec.corpus_file) if spec.corpus_file is not None else None
    try:
        cancelled: list[BaseException] = []
        if spec.kind == "word2vec":
            t_fit, seen = [None], [0.0, 0]

            def w2v_cb(info: dict):
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

            try:
                with _registered(mod, f"live-{run.id}", PRESETS["word2vec"]) as name:
                    mod.train(name, device="cpu", out=out, seed=spec.seed, time_limit=budget, callback=w2v_cb,
                              paragraphs=None if corpus_path else subset(spec.words, spec.seed), corpus_path=corpus_path)
            finally:
                if corpus_path:  # an upload's segmented copy (user_text.UserSentences) goes with the session, not to the cache
                    from .user_text import UserSentences, user_files

                    UserSentences(user_files(corpus_path)).path.unlink(missing_ok=True)
        else:
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
            preset = replace(P, steps=plan_steps(spec.kind, budget), data=data)

            def cb(step: int, ema: float, info: dict):
                emit(step, ema, info["tokens"], info["elapsed"])

            kw = dict(device="cpu", out=out, seed=spec.seed, callback=cb, stretch=budget, save_every=SAVE_EVERY_S)
            if spec.kind == "elmo":  # its time_limit covers the whole command and keeps ~60 s for the perplexity
                kw.update(time_limit=budget + 60.0 + 0.02 * data["valid_sentences"], corpus_path=corpus_path)
            else:
                kw.update(time_limit=budget, paragraphs=paragraphs)
                if spec.kind == "bert":
                    kw["corpus_path"] = corpus_path
            with _registered(mod, f"live-{run.id}", preset) as name:
                mod.train(name, **kw)
        if cancelled:  # word2vec saved what it had: the run ends as cancelled, with a loadable model
            run.summary = checkpoint.read_config(out).get("summary", {})
            raise cancelled[0]
        report(1.0, None, "save")
    except BaseException:
        run.ended = time.time()
        raise
    run.ended = time.time()
    run.summary = checkpoint.read_config(out).get("summary", {})
    run.state = "done"
    return run


def head_formation(rp) -> dict | None:
    """The attention heads that form first, from a replay.Replay: for the previous- and the next-character share
    (viz.attention.head_summaries, averaged over the timeline's fixed sentences) the head with the largest share at
    the last snapshot, as {"prev"/"next": {"layer", "head" (from 1), "shares": [one per snapshot]}}; GPT's causal
    attention has no next-character share. None when the timeline holds no attention (ELMo)."""
    from . import replay

    n = len(replay.attention_sentences(rp))
    if n == 0:
        return None
    per = [replay.head_shares(rp, i) for i in range(n)]
    out = {}
    for m in ("prev",) if rp.kind == "gpt" else ("prev", "next"):
        mean = np.mean([p[m] for p in per], axis=0)  # (S, L, H)
        layer, head = divmod(int(np.argmax(mean[-1])), mean.shape[2])
        out[m] = {"layer": layer + 1, "head": head + 1, "shares": [round(float(x), 4) for x in mean[:, layer, head]]}
    return out


FORMED_SHARE = 0.5  # a head that gives at least this share of its attention to one neighbour counts as formed


def head_verdict(hf: dict, formed: float = FORMED_SHARE) -> dict:
    """What a run's neighbour heads show, from `head_formation`: the neighbour ("prev" or "next") whose head ends with
    the larger share, as {"which", "layer", "head", "start" (share at step 0), "end" (at the last snapshot), "peak"
    (highest), "first" (index of the first snapshot at or above `formed`, or None), "state"}: "formed" (it ends at
    or above `formed`), "faded" (it got there, then fell below) or "forming" (it never got there)."""
    which = max(hf, key=lambda m: hf[m]["shares"][-1])
    sh = hf[which]["shares"]
    first = next((i for i, x in enumerate(sh) if x >= formed), None)
    state = "formed" if sh[-1] >= formed else ("faded" if first is not None else "forming")
    return {"which": which, "layer": hf[which]["layer"], "head": hf[which]["head"], "start": sh[0], "end": sh[-1],
            "peak": max(sh), "first": first, "state": state}


def nearest_words(folder: Path, words=EXAMPLE_WORDS, topn: int = 5) -> dict[str, list[tuple[str, float]]]:
    """word2vec: each word's `topn` nearest words in the run's model (words it does not know are left out)."""
    import ctxlib

    kv = ctxlib.load(folder).keyed_vectors
    return {w: [(x, round(float(s), 3)) for x, s in kv.most_similar(w, topn=topn)] for w in words if w in kv}


# -- the session's folder ----------------------------------------------------------------------------------------
class LiveSession:
    """A temporary folder for one app session's runs and uploads; keeps the last MAX_RUNS runs' folders."""

    def __init__(self, root: str | Path | None = None):
        clean_stale_now_and_then(root)
        self.dir = Path(tempfile.mkdtemp(prefix=FOLDER_PREFIX, dir=root))
        (self.dir / OWNER_FILE).write_text(json.dumps({"pid": os.getpid(), "start": _process_start(os.getpid()),
                                                       "created": round(time.time(), 1)}), encoding="utf-8")
        self.runs: list[LiveRun] = []
        self._finalizer = weakref.finalize(self, shutil.rmtree, str(self.dir), True)

    def new_run(self, spec: LiveSpec) -> LiveRun:
        run = LiveRun(spec, self.dir / "pending")
        run.out = self.dir / f"run-{run.id}"
        self.runs.append(run)
        for old in self.runs[:-MAX_RUNS]:
            shutil.rmtree(old.out, ignore_errors=True)
        self.runs = self.runs[-MAX_RUNS:]
        return run

    def latest(self) -> LiveRun | None:
        return self.runs[-1] if self.runs else None

    def upload_dir(self) -> Path:
        return self.dir / "upload"

    def close(self) -> None:
        self._finalizer()


# -- stale session folders (a crashed or killed server leaves them behind) ------------------------------------------
def _process_start(pid: int) -> int | None:
    """When process `pid` started (clock ticks since boot, /proc/<pid>/stat field 22), or None where unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return int(stat[stat.rindex(")") + 2:].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def _owner_alive(owner: dict) -> bool:
    """Whether the process recorded in a folder's owner file still runs (a reused pid with another start: no)."""
    pid = owner.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process with that pid: it runs
        pass
    start = _process_start(pid)
    return start is None or owner.get("start") is None or start == owner["start"]


def _newest_mtime(folder: Path) -> float:
    """The latest modification time of the folder and what it holds (a run writes into run-N/ every few seconds)."""
    newest = folder.stat().st_mtime
    for f in folder.rglob("*"):
        try:
            newest = max(newest, f.lstat().st_mtime)
        except OSError:
            pass
    return newest


def clean_stale(root: str | Path | None = None, max_age_h: float | None = None, now: float | None = None) -> list[Path]:
    """Remove the live-session folders under `root` (the temporary folder by default) that nothing has written to for
    `max_age_h` hours (STALE_H) and whose owning process is gone; the removed folders. A folder of a running process
    (this one's other sessions included) is never touched; one without a readable owner file (made before owners were
    recorded) counts as ownerless, so only its age decides."""
    base = Path(root) if root is not None else Path(tempfile.gettempdir())
    limit = (time.time() if now is None else now) - 3600.0 * (STALE_H if max_age_h is None else max_age_h)
    removed = []
    for d in base.glob(FOLDER_PREFIX + "*"):
        try:
            if d.is_symlink() or not d.is_dir() or d.stat().st_uid != os.getuid():
                continue
            try:
                owner = json.loads((d / OWNER_FILE).read_text(encoding="utf-8"))
            except (OSError, ValueError):
                owner = {}
            if (isinstance(owner, dict) and _owner_alive(owner)) or _newest_mtime(d) > limit:
                continue
            shutil.rmtree(d)
            removed.append(d)
            log.info("removed the stale live-training folder %s (its process is gone)", d)
        except OSError as e:  # another process removing it at the same time, a permission: leave it
            log.warning("could not remove the stale live-training folder %s: %s", d, e)
    return removed


_LAST_CLEAN: dict[str, float] = {}


def clean_stale_now_and_then(root: str | Path | None = None) -> None:
    """`clean_stale` at most every CLEAN_EVERY_S seconds per folder and process (a new session calls it); never
    raises."""
    key = str(root)
    if time.time() - _LAST_CLEAN.get(key, 0.0) < CLEAN_EVERY_S:
        return
    _LAST_CLEAN[key] = time.time()
    try:
        clean_stale(root)
    except Exception as e:  # cleaning is a courtesy: a session must start regardless
        log.warning("cleaning stale live-training folders failed: %s", e)


def make_work(session: LiveSession, spec: LiveSpec) -> Callable:
    """The job's work: a new run in the session's folder, trained with the job's `report`."""

    def work(job) -> LiveRun:
        run = session.new_run(spec)
        try:
            return train(spec, run, job.report)
        except BaseException as e:
            run.state = "cancelled" if type(e).__name__ == "Cancelled" else "failed"
            raise

    return work


# -- download ----------------------------------------------------------------------------------------------------
def zip_bytes(folder: Path) -> bytes:
    """The run's checkpoint (config, vocabulary, weights and the timeline if any) as a zip, flat."""
    import io

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name in ZIP_FILES:
            f = Path(folder) / name
            if f.is_file():
                zf.write(f, name)
    return buf.getvalue()

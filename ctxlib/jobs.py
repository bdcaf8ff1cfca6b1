"""A server-wide queue for the app's heavy buttons (live mix training, fine-tuning, live training): at most
`MAX_RUNNING` jobs compute at a time (1 by default, env CTXLAB_MAX_JOBS), across all kinds; the others wait in one
first-in-first-out line and can say their place in it.

    job = jobs.start("finetune", work, owner=session_id)   # enqueues and returns at once (never raises Busy)
    job.state            # QUEUED -> RUNNING -> DONE | CANCELLED | FAILED (a queued job can go straight to CANCELLED)
    job.place()          # 0 while running, k while k-th in line, None once finished
    job.wait_s(), job.eta_s()   # seconds until it starts; until it ends (the wait counted)
    job.progress, job.phase, job.points, job.partial, job.result, job.error
    job.touch()          # the owner's page polls: "I am still here"
    job.cancel()         # queued: leaves the line; running: stops at the work's next report, keeping what was done

`work(job)` does the computing and calls `job.report(fraction, point, phase, partial=...)` as it goes: that records
the progress (and the last partial result, kept after a cancel) and raises `Cancelled` once a cancel was asked.

Rules:
- One owner holds at most one queued-or-running job per kind: a second `start` by the same owner returns the job it
  already has (a double click or a rerun cannot queue twice). Jobs with no owner (scripts, tests) are not limited.
- A session that leaves frees its job: the page calls `job.touch()` on every poll, and the reaper (a daemon thread of
  this module) cancels a queued or running job whose owner has not polled for `STALE_S` seconds (env
  CTXLAB_JOB_STALE_S, 120 by default; generous because browsers slow the timers of a tab in the background to about
  one a minute). Streamlit 1.67 has no public "session ended" hook: `Runtime.is_active_session` lives in the internal
  `streamlit.runtime` package, and a disconnected session may still reconnect, so the heartbeat is the rule here.
  Finished jobs nobody polled for `KEEP_S` seconds are forgotten (their results are the owner's, in its session).
- Nothing is shared between owners: a job's result is handed to its own page only (`get` by id), and the works
  train copies (nothing goes to checkpoints/).
- Threads, not processes: the running job is a daemon thread of the server process with torch on `threads` threads
  (1 by default) without changing the other threads' count. A worker process (spawn) would isolate the job from the
  server's Python work, but the works are closures over models already loaded in the server (a process would load
  them again: seconds and a second copy in memory) and their results (models, figures' points) would have to be
  pickled back; with one job at a time and torch releasing the GIL in its kernels, the thread is the smaller cost.
Nothing here imports Streamlit: the page only reads a job's fields (it polls).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import os
import threading
import time
from typing import Any, Callable

log = logging.getLogger(__name__)

QUEUED, RUNNING, DONE, CANCELLED, FAILED = "queued", "running", "done", "cancelled", "failed"
ACTIVE = (QUEUED, RUNNING)


def _env_number(name: str, default: float, kind=float):
    try:
        return max(kind(os.environ.get(name, default)), kind(1) if kind is int else 0.0)
    except ValueError:
        log.warning("%s=%r is not a number: using %s", name, os.environ.get(name), default)
        return default


MAX_RUNNING: int = _env_number("CTXLAB_MAX_JOBS", 1, int)  # jobs computing at once, all kinds together
STALE_S: float = _env_number("CTXLAB_JOB_STALE_S", 120.0)  # an owner silent this long has left: its job is cancelled
KEEP_S: float = 900.0  # a finished job nobody polled for this long is forgotten
REAP_EVERY_S: float = 2.0  # how often the reaper looks
DEFAULT_RUN_S: float = 60.0  # a job's expected run time before its kind has finished once (unless start says)

_COND = threading.Condition()  # guards everything below; notified when the line moves
_LINE: list["Job"] = []  # waiting jobs, first in first out
_RUNNING: list["Job"] = []
_JOBS: dict[int, "Job"] = {}  # every job still known, by id
_LAST_RUN_S: dict[str, float] = {}  # kind -> run time of its last finished (DONE) job
_RUNS_S: dict[str, list[float]] = {}  # kind -> run times of its last RUNS_KEPT finished (DONE) jobs, oldest first
RUNS_KEPT = 5
_IDS = itertools.count(1)
_REAPER: threading.Thread | None = None


class Cancelled(Exception):
    """Raised inside a job's work by `Job.report` once the job was asked to stop."""


class Busy(RuntimeError):
    """Kept for code written against the one-job-per-slot version; `start` no longer raises it (it enqueues)."""

    def __init__(self, job: "Job"):
        super().__init__(f"another {job.kind} job is running")
        self.job = job


_UNSET = object()


class Job:
    """One queued run: its state, place, progress (0..1), the points it reported, its partial and final result."""

    def __init__(
        self, kind: str, owner: str, work: Callable[["Job"], Any], threads: int | None, expected_s: float | None
    ):
        self.id, self.kind, self.owner = next(_IDS), kind, owner
        self.state, self.progress, self.phase = QUEUED, 0.0, ""
        self.points: list[dict] = []  # what `report` was given, in order (the page's live plot)
        self.partial: Any = None  # the work's last reported partial result: kept when the job is cancelled
        self.result: Any = None
        self.error: str | None = None
        self.cancel_reason = ""  # "owner left" when the reaper cancelled it
        self.submitted, self.started, self.ended = time.time(), None, None
        self.touched = self.submitted
        self.expected_s = expected_s
        self._work, self._threads = work, threads
        self._stop, self._done = threading.Event(), threading.Event()
        self._first: tuple[float, float] | None = (
            None  # (time, progress) after the first report that moved the progress
        )
        self._mark: tuple[float, float] | None = None  # the same at the current phase's first report
        self._thread: threading.Thread | None = None

    @property
    def slot(self) -> str:  # the old name of `kind`
        return self.kind

    @property
    def running(self) -> bool:
        return self.state == RUNNING

    @property
    def queued(self) -> bool:
        return self.state == QUEUED

    @property
    def finished(self) -> bool:
        return self.state not in ACTIVE

    def report(
        self, progress: float, point: dict | None = None, phase: str | None = None, partial: Any = _UNSET
    ) -> None:
        """Record progress (0..1, never going back), an optional data point, phase and partial result; raises
        Cancelled when asked to stop (what was recorded stays on the job)."""
        before, now = self.progress, time.time()
        self.progress = max(before, min(1.0, float(progress)))
        # rates are measured from the first report that moved the progress, and from the current phase's start, by
        # the progress made after them: the setup before (loading data, imports) and a first jump are not a rate
        if self._first is None and self.progress > before:
            self._first = (now, self.progress)
        if self._mark is None and self.progress > before or phase is not None and phase != self.phase:
            self._mark = (now, self.progress)
        if phase is not None:
            self.phase = phase
        if point is not None:
            self.points.append(dict(point))
        if partial is not _UNSET:
            self.partial = partial
        if self._stop.is_set():
            raise Cancelled()

    def touch(self) -> None:
        """The owner is still here (the page calls this on every poll); see STALE_S."""
        self.touched = time.time()

    def cancel(self, reason: str = "") -> None:
        """A queued job leaves the line at once; a running one stops at its next report (`wait` waits for it)."""
        with _COND:
            if self.finished:
                return
            self.cancel_reason = self.cancel_reason or reason
            if self.state == QUEUED:
                _LINE.remove(self)
                self._finish(CANCELLED)
            else:
                self._stop.set()
            _COND.notify_all()

    @property
    def cancel_requested(self) -> bool:
        return self._stop.is_set() or self.state == CANCELLED

    def place(self) -> int | None:
        """0 while running, k while k-th in line (1 = next), None once finished."""
        with _COND:
            if self.state == RUNNING:
                return 0
            return _LINE.index(self) + 1 if self.state == QUEUED else None

    def elapsed_s(self) -> float:
        """Seconds of running so far (0 while queued)."""
        return 0.0 if self.started is None else (self.ended or time.time()) - self.started

    def expected_run_s(self) -> float:
        """The whole run's expected length: the lower median of the kind's last RUNS_KEPT finished runs together with
        the running jobs of the kind whose rate is known (`_projected_s`): one slow first run, which loads and imports
        what later ones reuse, does not set the later estimates. Before any: what start was told, else DEFAULT_RUN_S."""
        with _COND:
            runs = list(_RUNS_S.get(self.kind, ()))
            runs += [s for j in _RUNNING if j.kind == self.kind and (s := j._projected_s()) is not None]
        if runs:
            return sorted(runs)[(len(runs) - 1) // 2]
        return self.expected_s or DEFAULT_RUN_S

    def _projected_s(self) -> float | None:
        """A running job's projected time from its first progress to its end (None until its rate is known): what a
        run of its kind takes, the setup before the first progress left out."""
        if self.state != RUNNING or self._first is None or self.progress - self._first[1] <= 0.02:
            return None
        return time.time() - self._first[0] + self.remaining_s()

    def remaining_s(self) -> float:
        """Seconds of running left: the progress rate carried to the end, measured over the current phase once it has
        moved the progress by 2 %, else since the first progress; before any, the expected run less the time run.
        Rates leave out the setup before the first progress (loading data, imports): a plain elapsed * (1 - p) / p
        counted it as if it were progress, two to three times the real time left in bench/queue_demo.py."""
        if self.finished:
            return 0.0
        if self.state == RUNNING:
            now = time.time()
            for mark in (self._mark, self._first):
                if mark is not None and self.progress - mark[1] > 0.02 and now > mark[0]:
                    return (1 - self.progress) * (now - mark[0]) / (self.progress - mark[1])
        return max(1.0, self.expected_run_s() - self.elapsed_s())

    def wait_s(self) -> float:
        """Seconds until a queued job starts (the running jobs' and the earlier jobs' expected times); 0 otherwise."""
        with _COND:
            if self.state != QUEUED:
                return 0.0
            return _start_in(_LINE[: _LINE.index(self)])

    def eta_s(self) -> float:
        """Seconds until the job ends, the wait in line counted; 0 once finished."""
        return 0.0 if self.finished else self.wait_s() + self.remaining_s()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the job is finished (run, cancelled or failed); True if it is."""
        self._done.wait(timeout)
        return self.finished

    def _finish(self, state: str) -> None:  # under _COND
        self.state, self.ended = state, time.time()
        self._work = None  # let the models the work holds go
        self._done.set()

    def _run(self) -> None:
        state = FAILED
        try:
            if self._threads:
                limit_torch_threads(self._threads)
            self.result = self._work(self)
            self.progress, state = 1.0, DONE
        except Cancelled:
            state = CANCELLED
        except Exception as e:  # the page shows it; the line goes on
            log.exception("job %s %d failed", self.kind, self.id)
            self.error = f"{type(e).__name__}: {e}"
        finally:
            with _COND:
                _RUNNING.remove(self)
                self._finish(state)
                if state == DONE:
                    _LAST_RUN_S[self.kind] = self.ended - self.started
                    _RUNS_S[self.kind] = (_RUNS_S.get(self.kind, []) + [self.ended - self.started])[-RUNS_KEPT:]
                _dispatch()
                _COND.notify_all()
            log.info("job %s %d %s after %.1f s", self.kind, self.id, state, self.elapsed_s())


def _start_in(ahead: list[Job]) -> float:
    """Seconds until a job behind `ahead` (in line order) starts, with MAX_RUNNING jobs computing at once."""
    free = sorted(j.remaining_s() for j in _RUNNING)
    free = (free + [0.0] * max(1, MAX_RUNNING))[: max(1, MAX_RUNNING, len(free))]
    heapq.heapify(free)
    for j in ahead:
        heapq.heappush(free, heapq.heappop(free) + j.expected_run_s())
    return free[0]


def _dispatch() -> None:
    """Start waiting jobs, first in first out, while fewer than MAX_RUNNING run (under _COND)."""
    while _LINE and len(_RUNNING) < max(1, MAX_RUNNING):
        job = _LINE.pop(0)
        job.state, job.started = RUNNING, time.time()
        _RUNNING.append(job)
        job._thread = threading.Thread(target=job._run, daemon=True, name=f"ctxlab-job-{job.kind}-{job.id}")
        job._thread.start()
        log.info("job %s %d started after %.1f s in line", job.kind, job.id, job.started - job.submitted)


def limit_torch_threads(n: int) -> None:
    """Run this thread's torch ops on `n` threads, leaving other threads' (and new threads') count as it was.

    torch.set_num_threads sets this thread's OpenMP/MKL count and also the default new threads start with
    (Streamlit runs each script rerun in a new thread), so the default is put back from a helper thread."""
    try:
        import torch
    except ImportError:
        return
    before = torch.get_num_threads()  # also initialises this thread's count, so the default cannot override it later
    torch.set_num_threads(n)
    restore = threading.Thread(target=torch.set_num_threads, args=(before,), name="ctxlab-threads-restore")
    restore.start()
    restore.join()


def start(
    kind: str, work: Callable[[Job], Any], *, owner: str = "", threads: int | None = 1, expected_s: float | None = None
) -> Job:
    """Put `work(job)` in the line as a job of `kind` and return the job at once (it runs when its turn comes).

    An owner's second start of a kind while its first is queued or running (and not being cancelled) returns that
    first job. `expected_s`: a guess of the run time for the wait estimates until a job of this kind has finished."""
    with _COND:
        _ensure_reaper()
        if owner:
            for j in (*_RUNNING, *_LINE):
                if j.kind == kind and j.owner == owner and not j._stop.is_set():
                    j.touch()
                    return j
        job = Job(kind, owner, work, threads, expected_s)
        _JOBS[job.id] = job
        _LINE.append(job)
        log.info("job %s %d queued (owner %s), place %d", kind, job.id, owner or "-", len(_LINE))
        _dispatch()
        _COND.notify_all()
    return job


def get(kind: str, job_id: int) -> Job | None:
    """The job `job_id` if it is a known job of `kind` (a page keeps the id of the job it started)."""
    job = _JOBS.get(job_id)
    return job if job is not None and job.kind == kind else None


def current(kind: str) -> Job | None:
    """The latest job of `kind` started by anyone, active or finished (None before the first)."""
    with _COND:
        return max((j for j in _JOBS.values() if j.kind == kind), key=lambda j: j.id, default=None)


def owned_by(owner: str, kind: str | None = None) -> list[Job]:
    """The owner's known jobs (of `kind`, or all), oldest first."""
    with _COND:
        return sorted((j for j in _JOBS.values() if j.owner == owner and kind in (None, j.kind)), key=lambda j: j.id)


def line() -> tuple[list[Job], list[Job]]:
    """(the running jobs, the waiting jobs in order), all kinds."""
    with _COND:
        return list(_RUNNING), list(_LINE)


def wait_if_started_now() -> float:
    """Seconds a job started now would wait before it runs."""
    with _COND:
        return _start_in(list(_LINE)) if len(_RUNNING) >= max(1, MAX_RUNNING) or _LINE else 0.0


def reap(now: float | None = None) -> list[Job]:
    """Cancel the active jobs whose owner has not polled for STALE_S seconds; forget finished jobs nobody polled for
    KEEP_S seconds. Returns the jobs it cancelled (the reaper thread calls this every REAP_EVERY_S)."""
    now = time.time() if now is None else now
    with _COND:
        stale = [j for j in (*_RUNNING, *_LINE) if j.owner and now - j.touched > STALE_S and not j._stop.is_set()]
        for j in [j for j in _JOBS.values() if j.finished and now - max(j.touched, j.ended) > KEEP_S]:
            del _JOBS[j.id]
    for j in stale:
        log.info("job %s %d: owner %s silent for %.0f s, cancelled", j.kind, j.id, j.owner, now - j.touched)
        j.cancel("owner left")
    return stale


def _reaper_loop() -> None:
    while True:
        with _COND:
            _COND.wait(REAP_EVERY_S)
        try:
            reap()
        except Exception:  # never let the reaper die
            log.exception("job reaper")


def _ensure_reaper() -> None:  # under _COND
    global _REAPER
    if _REAPER is None or not _REAPER.is_alive():
        _REAPER = threading.Thread(target=_reaper_loop, daemon=True, name="ctxlab-job-reaper")
        _REAPER.start()

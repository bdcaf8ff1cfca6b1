"""Background jobs for the app's heavy buttons (live fine-tuning): one thread per job, at most one running job per
slot in the whole server process, so one student cannot start many and starve the CPU for the others.

    job = jobs.start("finetune", work, owner=session_id)   # raises jobs.Busy while another "finetune" job runs
    job.progress, job.points, job.state, job.result, job.eta_s(); job.cancel()

`work(job)` does the computing; it calls `job.report(fraction, point)` as it goes, which records the progress and
raises `jobs.Cancelled` once `job.cancel()` was asked, so cancelling stops the work at its next report. The job's
thread runs torch on `threads` threads (1 by default) without changing the thread count of the server's other
threads. Nothing here imports Streamlit: the page only reads a job's fields (it polls).
"""
from __future__ import annotations

import itertools
import logging
import threading
import time
from typing import Any, Callable

log = logging.getLogger(__name__)

RUNNING, DONE, CANCELLED, FAILED = "running", "done", "cancelled", "failed"
_LOCK = threading.Lock()  # guards _SLOTS: the check "is one running?" and the start are one step
_SLOTS: dict[str, "Job"] = {}  # slot -> its latest job (running or finished)
_IDS = itertools.count(1)


class Cancelled(Exception):
    """Raised inside a job's work by `Job.report` once the job was asked to stop."""


class Busy(RuntimeError):
    """Another job holds the slot; `.job` is that job (its progress and expected end are for the message)."""

    def __init__(self, job: "Job"):
        super().__init__(f"another {job.slot} job is running ({job.progress:.0%} done, about {job.eta_s():.0f} s left)")
        self.job = job


class Job:
    """One background run: its state, progress (0..1), the points it reported, its result or error."""

    def __init__(self, slot: str, owner: str = ""):
        self.id, self.slot, self.owner = next(_IDS), slot, owner
        self.state, self.progress, self.phase = RUNNING, 0.0, ""
        self.points: list[dict] = []  # what `report` was given, in order (the page's live plot)
        self.result: Any = None
        self.error: str | None = None
        self.started, self.ended = time.time(), None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self.state == RUNNING

    def report(self, progress: float, point: dict | None = None, phase: str | None = None) -> None:
        """Record progress (0..1, never going back), an optional data point and phase; raises Cancelled when asked to stop."""
        self.progress = max(self.progress, min(1.0, float(progress)))
        if phase is not None:
            self.phase = phase
        if point is not None:
            self.points.append(dict(point))
        if self._stop.is_set():
            raise Cancelled()

    def cancel(self) -> None:
        """Ask the work to stop at its next report (the thread ends a moment later; `wait` waits for it)."""
        self._stop.set()

    @property
    def cancel_requested(self) -> bool:
        return self._stop.is_set()

    def elapsed_s(self) -> float:
        return (self.ended or time.time()) - self.started

    def eta_s(self) -> float:
        """Seconds left, extrapolated from the time so far and the progress (a guess: 60 s before any progress)."""
        if not self.running:
            return 0.0
        if self.progress <= 0.02:
            return 60.0
        return self.elapsed_s() * (1 - self.progress) / self.progress

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the job's thread ends; True if it ended."""
        if self._thread is not None:
            self._thread.join(timeout)
        return not self.running

    def _run(self, work: Callable[["Job"], Any], threads: int | None) -> None:
        try:
            if threads:
                _limit_torch_threads(threads)
            self.result = work(self)
            self.progress, self.state = 1.0, DONE
        except Cancelled:
            self.state = CANCELLED
        except Exception as e:  # the page shows it; the server goes on
            log.exception("job %s %d failed", self.slot, self.id)
            self.error, self.state = f"{type(e).__name__}: {e}", FAILED
        finally:
            self.ended = time.time()


def _limit_torch_threads(n: int) -> None:
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


def start(slot: str, work: Callable[[Job], Any], *, owner: str = "", threads: int | None = 1) -> Job:
    """Start `work(job)` in a daemon thread as the slot's job; raises Busy when the slot's job is still running."""
    with _LOCK:
        cur = _SLOTS.get(slot)
        if cur is not None and cur.running:
            raise Busy(cur)
        job = _SLOTS[slot] = Job(slot, owner)
    job._thread = threading.Thread(target=job._run, args=(work, threads), daemon=True, name=f"ctxlab-job-{slot}-{job.id}")
    job._thread.start()
    log.info("job %s %d started (owner %s)", slot, job.id, owner or "-")
    return job


def current(slot: str) -> Job | None:
    """The slot's latest job, running or finished (None before the first)."""
    return _SLOTS.get(slot)


def get(slot: str, job_id: int) -> Job | None:
    """The slot's latest job if its id is `job_id` (a page keeps the id of the job it started)."""
    job = _SLOTS.get(slot)
    return job if job is not None and job.id == job_id else None

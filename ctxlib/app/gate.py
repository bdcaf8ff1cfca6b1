"""Page runs take turns: at most a few page scripts of one server compute at once; the others wait, first come first
served.

Every page run (app.py) holds a slot of the process's `GATE` while its script runs. Why: Python runs one thread at
a time (the GIL), so 30 students' page scripts started together do not finish sooner for running together. They
take turns every few milliseconds, all of them finish near the end, and each turn costs: a class of 30 × 3 on Type
vs token used 7.3-8.5 s of the server's CPU with every script running at once and 4.5-5.5 s with two at a time, p95
4.1-4.7 s before and 2.0-2.4 s after (`bench/classroom_load.py`, the same sentences; docs/serving.md). Two slots
keep both cores busy (one script's torch code runs without the GIL while the other's Python holds it).

A run that holds its slot longer than the lease (`CTXLAB_PAGE_LEASE_S`, default 1 s: a training replay, a live job's
page, the atlas on a new word) stops counting against the slots, so one long page never makes the class wait more
than the lease. Slots: `CTXLAB_PAGE_SLOTS` (default 2; 0 turns the gate off). Fragment reruns (a widget inside
st.fragment) and the warm-up thread do not take a slot; the warm-up waits between its steps while pages are queued
(`wait_quiet`).
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import threading
import time

log = logging.getLogger(__name__)

SLOTS_ENV, LEASE_ENV = "CTXLAB_PAGE_SLOTS", "CTXLAB_PAGE_LEASE_S"
DEFAULT_SLOTS, DEFAULT_LEASE_S = 2, 1.0
MAX_SLOTS, MAX_LEASE_S = 64, 600.0
POLL_S = 0.25  # a waiter looks at the clock at least this often (a lease can run out without anyone leaving)


def env_number(name: str, default, cast, lo, hi):
    """$name as `cast` within [lo, hi]; unset: `default`; anything else: `default`, with a warning naming it."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = cast(raw)
    except ValueError:
        value = None
    if value is None or not lo <= value <= hi:
        log.warning("%s=%r is not a number from %s to %s; using %s", name, raw, lo, hi, default)
        return default
    return value


class Gate:
    """At most `slots` holders at once, each counted for `lease_s` seconds at most; waiters enter in arrival order.
    `slots` 0: no gate (enter returns at once). Each waiter sleeps on its own event, so a leave wakes only the runs it
    lets in (with 30 waiters, waking them all on every change cost more CPU than the gate saved)."""

    def __init__(self, slots: int, lease_s: float, clock=time.monotonic):
        self.slots, self.lease_s, self._clock = slots, lease_s, clock
        self._lock = threading.Lock()
        self._held: dict[int, float] = {}  # ticket -> when it entered
        self._queue: collections.deque[tuple[int, threading.Event]] = collections.deque()
        self._next = 0
        self.admitted = 0  # runs let in since the start (read by tests and the bench)

    def _counted(self, now: float) -> int:
        """Holders still within their lease."""
        return sum(1 for t in self._held.values() if now - t < self.lease_s)

    def _admit(self) -> None:
        """(Lock held.) Let in the first waiters while slots are free."""
        now = self._clock()
        while self._queue and self._counted(now) < self.slots:
            ticket, event = self._queue.popleft()
            self._held[ticket] = now
            self.admitted += 1
            event.set()

    def enter(self) -> int | None:
        """Wait for a slot (first come, first served); returns the ticket to give to `leave` (None: gate off)."""
        if self.slots <= 0:
            return None
        event = threading.Event()
        with self._lock:
            ticket, self._next = self._next, self._next + 1
            self._queue.append((ticket, event))
            self._admit()
        try:
            while not event.wait(POLL_S):  # a lease can run out without anyone leaving: look again now and then
                with self._lock:
                    self._admit()
        except BaseException:
            with self._lock:
                if (ticket, event) in self._queue:
                    self._queue.remove((ticket, event))
            self.leave(ticket)  # let in while it was interrupted: give the slot back
            raise
        return ticket

    def leave(self, ticket: int | None) -> None:
        if ticket is None:
            return
        with self._lock:
            self._held.pop(ticket, None)
            self._admit()

    @contextlib.contextmanager
    def slot(self):
        """Hold a slot for the block."""
        ticket = self.enter()
        try:
            yield
        finally:
            self.leave(ticket)

    def waiting(self) -> int:
        """Runs queued for a slot now."""
        with self._lock:
            return len(self._queue)

    def busy(self) -> int:
        """Slots counted now (holders within their lease)."""
        with self._lock:
            return self._counted(self._clock())

    def wait_quiet(self, max_s: float, settle_s: float = 0.0, poll_s: float = 0.05) -> bool:
        """Wait until no run waits for a slot and none is counted, and that for `settle_s` seconds on end (the gap
        between two students' runs is not the end of a class), at most `max_s` seconds (True: quiet)."""
        now = time.monotonic()
        end, quiet_since = now + max_s, now
        while True:
            if self.waiting() or self.busy():
                quiet_since = None
            elif quiet_since is None:
                quiet_since = time.monotonic()
            now = time.monotonic()
            if quiet_since is not None and now - quiet_since >= settle_s:
                return True
            if now >= end:
                return False
            time.sleep(poll_s)


GATE = Gate(
    env_number(SLOTS_ENV, DEFAULT_SLOTS, int, 0, MAX_SLOTS),
    env_number(LEASE_ENV, DEFAULT_LEASE_S, float, 0.01, MAX_LEASE_S),
)

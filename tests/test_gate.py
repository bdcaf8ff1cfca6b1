"""ctxlib.app.gate: page runs take turns (at most `slots` at once, first come first served, a long run counted for its
lease only); the warm-up waits while pages queue; app.py holds a slot for each run. Waits here only bound a hang
(60 s); what is asserted never depends on how fast the machine is."""

import logging
import threading
import time
from pathlib import Path

import pytest

from ctxlib.app import gate, warmup

HANG_S = 60


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def until(cond, what: str) -> None:
    end = time.monotonic() + HANG_S
    while not cond():
        assert time.monotonic() < end, f"hung waiting for {what}"
        time.sleep(0.005)


def enter_in_thread(g: gate.Gate, name: str, order: list) -> tuple[threading.Thread, threading.Event]:
    admitted = threading.Event()

    def run():
        t = g.enter()
        order.append(name)
        admitted.set()
        release.wait(HANG_S)
        g.leave(t)

    release = threading.Event()
    th = threading.Thread(target=run, daemon=True)
    th.release = release
    th.start()
    return th, admitted


def test_two_slots_let_two_in_and_the_third_waits_until_one_leaves():
    g = gate.Gate(2, lease_s=HANG_S * 10)
    a, b = g.enter(), g.enter()
    assert g.busy() == 2 and g.waiting() == 0
    order: list = []
    th, admitted = enter_in_thread(g, "c", order)
    until(lambda: g.waiting() == 1, "c to queue")
    assert not admitted.is_set() and order == []
    g.leave(a)
    assert admitted.wait(HANG_S) and order == ["c"]
    assert g.busy() == 2  # b and c
    g.leave(b)
    th.release.set()
    th.join(HANG_S)
    assert g.busy() == 0 and g.admitted == 3


def test_waiters_enter_in_the_order_they_came():
    g = gate.Gate(1, lease_s=HANG_S * 10)
    first = g.enter()
    order, threads = [], []
    for i, name in enumerate("bcde"):
        th, _ = enter_in_thread(g, name, order)
        threads.append(th)
        until(lambda i=i: g.waiting() == i + 1, f"{name} to queue")
    g.leave(first)
    for th, name in zip(threads, "bcde"):  # each leaves only once admitted: the next may then go
        until(lambda name=name: name in order, f"{name} to be admitted")
        th.release.set()
        th.join(HANG_S)
    assert order == list("bcde")


def test_a_run_past_its_lease_stops_counting():
    clock = Clock()
    g = gate.Gate(1, lease_s=1.0, clock=clock)
    g.enter()  # a long page (a replay, a live job): never leaves here
    order: list = []
    th, admitted = enter_in_thread(g, "b", order)
    until(lambda: g.waiting() == 1, "b to queue")
    clock.t = 0.99
    assert not admitted.wait(3 * gate.POLL_S)  # still within the lease: b may not enter however long it waits
    clock.t = 1.0
    assert admitted.wait(HANG_S)
    assert g.busy() == 1  # b; the long run no longer counts
    th.release.set()
    th.join(HANG_S)


def test_a_slot_is_given_back_when_the_page_raises():
    g = gate.Gate(1, lease_s=HANG_S * 10)
    with pytest.raises(RuntimeError):
        with g.slot():
            assert g.busy() == 1
            raise RuntimeError("page failed")
    assert g.busy() == 0
    with g.slot():  # the next run gets in at once
        assert g.busy() == 1


def test_an_interrupted_waiter_leaves_the_queue(monkeypatch):
    g = gate.Gate(1, lease_s=HANG_S * 10)
    holder = g.enter()

    class Interrupted(threading.Event):
        def wait(self, timeout=None):
            raise KeyboardInterrupt

    monkeypatch.setattr(gate.threading, "Event", Interrupted)
    with pytest.raises(KeyboardInterrupt):
        g.enter()
    monkeypatch.undo()
    assert g.waiting() == 0 and g.busy() == 1
    g.leave(holder)
    with g.slot():
        assert g.busy() == 1


def test_no_slots_means_no_gate():
    g = gate.Gate(0, lease_s=1.0)
    tickets = [g.enter() for _ in range(100)]
    assert tickets == [None] * 100 and g.busy() == 0 and g.waiting() == 0
    g.leave(None)


def test_wait_quiet():
    clock = Clock()
    g = gate.Gate(2, lease_s=1.0, clock=clock)
    assert g.wait_quiet(0) is True
    t = g.enter()
    assert g.wait_quiet(0.05) is False  # a page within its lease: not quiet
    clock.t = 5.0
    assert g.wait_quiet(HANG_S) is True  # past its lease it no longer counts
    g.leave(t)


@pytest.mark.parametrize(
    "slots, lease, want, warned",
    [
        ("", "", (gate.DEFAULT_SLOTS, gate.DEFAULT_LEASE_S), []),
        ("0", "2.5", (0, 2.5), []),
        ("4", "0.5", (4, 0.5), []),
        ("two", "nan", (gate.DEFAULT_SLOTS, gate.DEFAULT_LEASE_S), ["two", "nan"]),
        ("-1", "0", (gate.DEFAULT_SLOTS, gate.DEFAULT_LEASE_S), ["-1", "0"]),
        (str(gate.MAX_SLOTS + 1), "inf", (gate.DEFAULT_SLOTS, gate.DEFAULT_LEASE_S), [str(gate.MAX_SLOTS + 1), "inf"]),
    ],
)
def test_settings_from_the_environment(monkeypatch, caplog, slots, lease, want, warned):
    monkeypatch.setenv(gate.SLOTS_ENV, slots)
    monkeypatch.setenv(gate.LEASE_ENV, lease)
    with caplog.at_level(logging.WARNING):
        got = (
            gate.env_number(gate.SLOTS_ENV, gate.DEFAULT_SLOTS, int, 0, gate.MAX_SLOTS),
            gate.env_number(gate.LEASE_ENV, gate.DEFAULT_LEASE_S, float, 0.01, gate.MAX_LEASE_S),
        )
    assert got == want
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == len(warned)
    for v, m in zip(warned, messages):  # each value not used is named, with what is used instead
        assert repr(v) in m and "using" in m


def test_the_warm_up_waits_for_queued_pages_before_each_step(monkeypatch):
    waits, ran = [], []
    monkeypatch.setattr(gate.GATE, "wait_quiet", lambda s, settle_s=0.0: waits.append(s) or True)
    monkeypatch.setenv("CTXLAB_WARMUP_YIELD_S", "2.5")
    warmup._step("demo", lambda: ran.append(len(waits)))
    assert waits == [2.5] and ran == [1]  # the wait came before the step
    monkeypatch.setenv("CTXLAB_WARMUP_YIELD_S", "0")
    warmup._step("demo", lambda: ran.append(len(waits)))
    assert waits == [2.5] and ran == [1, 1]
    for bad in ("soon", "-1", "1e9"):
        monkeypatch.setenv("CTXLAB_WARMUP_YIELD_S", bad)
        assert warmup.yield_s() == 3.0


def test_the_warm_up_step_runs_once_the_class_has_gone(monkeypatch):
    g = gate.Gate(1, lease_s=HANG_S * 10)
    monkeypatch.setattr(gate, "GATE", g)
    monkeypatch.setenv("CTXLAB_WARMUP_YIELD_S", str(HANG_S))
    t = g.enter()
    done = threading.Event()
    th = threading.Thread(target=lambda: warmup._step("demo", done.set), daemon=True)
    th.start()
    assert not done.wait(3 * 0.05)  # a page holds its slot: the step waits (it would wait up to HANG_S)
    g.leave(t)
    assert done.wait(HANG_S)
    th.join(HANG_S)


def test_every_page_run_holds_a_slot(monkeypatch):
    import app_fakes
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("CTXLAB_NO_PREWARM", "1")  # no warm-up thread in the tests
    app_fakes.install(monkeypatch)

    seen = []
    real = gate.GATE.slot

    def slot():
        seen.append("enter")
        return real()

    monkeypatch.setattr(gate.GATE, "slot", slot)
    before = gate.GATE.admitted
    at = AppTest.from_file(str(Path(__file__).resolve().parent.parent / "app.py"), default_timeout=120)
    at.run()
    at.run()
    assert seen == ["enter", "enter"]
    assert gate.GATE.admitted - before == (2 if gate.GATE.slots else 0)
    assert gate.GATE.busy() == 0  # given back after each run


def test_wait_quiet_waits_for_the_class_to_end_not_for_a_gap():
    g = gate.Gate(2, lease_s=HANG_S * 10)
    t = g.enter()
    done = threading.Event()
    th = threading.Thread(target=lambda: g.wait_quiet(HANG_S, settle_s=0.05) and done.set(), daemon=True)
    th.start()
    assert not done.wait(0.2)  # a page holds a slot: never quiet, however long
    g.leave(t)
    assert done.wait(HANG_S)
    th.join(HANG_S)


def test_only_the_first_warm_up_step_waits_for_a_quiet_second(monkeypatch):
    steps = []
    monkeypatch.setattr(warmup, "_step", lambda name, fn, settle_s=0.0: steps.append((name, settle_s)))
    warmup._warm_steps(models=[])
    assert steps[0] == ("corpus", warmup.FIRST_SETTLE_S) and warmup.FIRST_SETTLE_S > 0
    assert all(s == 0.0 for _, s in steps[1:]) and len(steps) > 1

"""ctxlib.app.memo: one computation per key shared by every session, read-only arrays, least recently used out,
failures not kept. Waits only bound a hang."""

import dataclasses
import threading

import numpy as np
import pytest

from ctxlib.app import memo

HANG_S = 60


def test_one_computation_per_key_and_the_same_object_back():
    calls = []

    @memo.memo(8)
    def f(a, b):
        calls.append((a, b))
        return np.arange(3) * a + b

    x = f(2, 1)
    assert f(2, 1) is x and calls == [(2, 1)]
    assert list(f(3, 0)) == [0, 3, 6] and calls == [(2, 1), (3, 0)]
    with pytest.raises(ValueError):  # shared between sessions: nobody may write into it
        x[0] = 5


@dataclasses.dataclass
class Profile:
    vecs: np.ndarray
    rows: list
    parts: dict


def test_arrays_inside_a_result_are_read_only_too():
    @memo.memo(4)
    def f(n):
        return Profile(np.zeros((n, 2)), [np.ones(2)], {"a": np.ones(1)}), (np.zeros(1),)

    p, (t,) = f(2)
    for arr in (p.vecs, p.rows[0], p.parts["a"], t):
        with pytest.raises(ValueError):
            arr[0] = 1


def test_the_least_recently_used_goes_first():
    calls = []

    @memo.memo(2)
    def f(k):
        calls.append(k)
        return k

    f("a"), f("b"), f("a"), f("c")  # "b" is the least recently used when "c" comes
    assert f.size() == 2
    f("a")
    assert calls == ["a", "b", "c"]
    f("b")
    assert calls == ["a", "b", "c", "b"]


def test_a_failure_is_not_kept():
    calls = []

    @memo.memo(4)
    def f(k):
        calls.append(k)
        if len(calls) == 1:
            raise RuntimeError("model busy")
        return k

    with pytest.raises(RuntimeError):
        f("x")
    assert f("x") == "x" and calls == ["x", "x"]


def test_the_key_function_leaves_out_what_it_does_not_name():
    calls = []

    @memo.memo(4, key=lambda name, _X: name)
    def f(name, _X):
        calls.append(name)
        return _X.sum()

    assert f("k", np.ones(3)) == 3
    assert f("k", np.zeros(3)) == 3  # the key names the data; X is not looked at again
    assert calls == ["k"]


def test_sessions_asking_at_once_share_one_computation():
    started, release, calls = threading.Event(), threading.Event(), []

    @memo.memo(4)
    def slow(k):
        calls.append(k)
        started.set()
        release.wait(HANG_S)
        return [k]

    out = []
    threads = [threading.Thread(target=lambda: out.append(slow("w")), daemon=True) for _ in range(5)]
    threads[0].start()
    assert started.wait(HANG_S)
    for th in threads[1:]:
        th.start()
    release.set()
    for th in threads:
        th.join(HANG_S)
    assert calls == ["w"] and len(out) == 5 and all(o is out[0] for o in out)


def test_clear_all():
    @memo.memo(4)
    def f(k):
        return object()

    a = f(1)
    memo.clear_all()
    assert f.size() == 0 and f(1) is not a

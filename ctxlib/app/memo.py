"""A per-process memo for what every session reads and no session changes (a model's vectors for some sentences, a
projection, a built figure).

Why not st.cache_data: on every hit it hashes each argument (calling inspect.signature once per argument) and
unpickles a fresh copy of the value. A Type vs token run that found everything cached spent ~7 ms of its ~30 ms on
those look-ups (four models' WordProfiles); a class reloads every page. Here a hit is one dict look-up and the value
is shared, so its numpy arrays are made read-only: a page that wrote into one would raise, not change another
session's result. Exceptions are not kept (the next call tries again); one computation per key however many
sessions ask at once; the least recently used entry goes past `maxsize`.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import threading

import numpy as np

_ALL: list = []  # every memo in the process (clear_all)


def _read_only(value):
    """`value` with its numpy arrays (itself, a dataclass's fields, a tuple's or dict's items) made read-only."""
    if isinstance(value, np.ndarray):
        value.flags.writeable = False
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            _read_only(getattr(value, f.name))
    elif isinstance(value, (tuple, list)):
        for v in value:
            _read_only(v)
    elif isinstance(value, dict):
        for v in value.values():
            _read_only(v)
    return value


def memo(maxsize: int, key=None):
    """Decorator: remember fn(*args) by `key(*args)` (default: the arguments themselves, which must be hashable)."""

    def deco(fn):
        cache: collections.OrderedDict = collections.OrderedDict()
        lock = threading.Lock()
        computing: dict = {}  # key -> the lock its one computation holds

        @functools.wraps(fn)
        def wrapper(*args):
            k = key(*args) if key else args
            with lock:
                if k in cache:
                    cache.move_to_end(k)
                    return cache[k]
                mine = computing.setdefault(k, threading.Lock())
            with mine:
                with lock:
                    if k in cache:  # another session computed it while this one waited
                        return cache[k]
                try:
                    value = _read_only(fn(*args))
                    with lock:
                        cache[k] = value
                        while len(cache) > maxsize:
                            cache.popitem(last=False)
                finally:
                    with lock:
                        computing.pop(k, None)
            return value

        def clear() -> None:
            with lock:
                cache.clear()

        wrapper.clear = clear
        wrapper.size = lambda: len(cache)
        _ALL.append(wrapper)
        return wrapper

    return deco


def clear_all() -> None:
    """Forget every memo's values (tests that swap the models)."""
    for m in _ALL:
        m.clear()

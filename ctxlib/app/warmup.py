"""Server start: torch threads for serving, and a background warm-up so a page's first use is as fast as a later one.

`start()` (app.py calls it after each page run; a module-level guard makes it once per process) sets torch's thread
count for the page scripts (CTXLAB_TORCH_THREADS, default half the cores, at most 4: many sessions encode small
batches at once, and more threads per call only fight over the cores) and starts one daemon thread that, with one
torch thread, in this order:
1. loads the corpus (the atlas needs it; parsed once and kept in the disk cache, ctxlib.cache);
2. compiles UMAP's numba code with a tiny fit (numba keeps compiled code under $NUMBA_CACHE_DIR, which this module
   points into the ctxlab cache folder when it is not set; pages import umap only later);
3. builds or reads from disk each loaded model's vocabulary type vectors (the nearest-words tables);
4. builds or reads from disk the atlas's opening map (ELMo, 地, 300 occurrences);
5. builds or reads from disk the frozen ELMo features of the ELMo page's live mix (every task);
6. moves what is alive then into Python's permanent generation (`gc.freeze`), out of the collector's full passes.
Python's collector is off from 1 to 6 (for the whole process: ~15 s): with it on, the corpus's millions of objects
set off full passes that held the GIL 0.3-1 s each, and loading the corpus from the disk cache took 6.4 s (0.5 s
without them).
Between 1 and 2 it makes one tiny optimizer step (`optimizer_warm`): torch imports torch._dynamo on the first one.
A step that fails is logged and skipped; the warm-up never raises. Off when CTXLAB_NO_PREWARM is set (tests). With
CTXLAB_TIMING_LOG set, each step's time is appended there as page "warmup:<step>".

The thread is not `nice`d (it was, at +10, until session 17): its Python work holds the GIL, and a low-priority thread
holding the GIL on a machine busy with other processes is descheduled while every page script waits for it (priority
inversion). A class of 30 on Home while the warm-up ran, with two busy loops and other work on the 2 cores: p95 10.0
and 11.9 s niced, 6.5 and 4.7 s not (runs alternated; docs/serving.md).
"""

from __future__ import annotations

import logging
import os
import threading
import time

from ctxlib import cache

from . import gate, timing

log = logging.getLogger(__name__)

if not os.environ.get("NUMBA_CACHE_DIR"):  # before anything imports numba (umap, pynndescent)
    os.environ["NUMBA_CACHE_DIR"] = str(cache.cache_dir() / "numba")

_LOCK = threading.Lock()
_THREAD: threading.Thread | None = None
TIMES: dict[str, float] = {}  # step -> seconds taken (read by tests and the bench)
FIRST_SETTLE_S = 1.0  # seconds of no page runs before the first step


def serving_threads() -> int:
    """Torch threads per page script: $CTXLAB_TORCH_THREADS, else half the cores (at least 1, at most 4)."""
    try:
        n = int(os.environ.get("CTXLAB_TORCH_THREADS", "0"))
    except ValueError:
        n = 0
    return n if n > 0 else max(1, min(4, (os.cpu_count() or 2) // 2))


def _set_serving_threads() -> None:
    try:
        import torch

        torch.set_num_threads(serving_threads())  # also the count new threads (each script run's) start with
    except Exception as e:  # no torch: nothing to set
        log.info("torch threads not set: %s", e)


def umap_warm() -> None:
    """A tiny UMAP fit through ctxlib.projection (the pages' code path): compiles numba's functions, or loads them
    from numba's disk cache. Without umap or numba installed, nothing happens."""
    import importlib

    import numpy as np

    try:
        importlib.import_module("umap")
    except Exception as e:  # not installed, or numba missing: the pages fall back and say so
        log.info("umap not warmed: %s", e)
        return
    from ctxlib.projection import project

    X = np.random.default_rng(0).normal(size=(40, 16)).astype(np.float32)
    project(X, "umap")


LIVE_MIX = ("pos", 200, 200)  # the ELMo page's live mix: first task, training and test sentences
LIVE_MIX_TASKS = ("pos", "sentiment")  # its tasks' two feature sets (NER reads POS's People's Daily sentences)


def _mix_features(enc) -> None:
    """The frozen ELMo features the live mix trains on (every task), in memory and on disk."""
    from ctxlib.evaluation import tasks

    _, n_train, n_test = LIVE_MIX
    for task in LIVE_MIX_TASKS:
        tasks.task_features(enc, task, "train", n_train)
        tasks.task_features(enc, task, "test", n_test)


def optimizer_warm() -> None:
    """One Adam step on a tiny model: torch's first optimizer step imports torch._dynamo (and sympy), ~2 s of CPU that
    the first live job (the ELMo page's mix, fine-tuning, live training) would otherwise pay."""
    import torch

    m = torch.nn.Linear(2, 1)
    opt = torch.optim.Adam(m.parameters())
    m(torch.zeros(1, 2)).sum().backward()
    opt.step()


def _one_torch_thread() -> None:
    try:
        from ctxlib.jobs import limit_torch_threads

        limit_torch_threads(1)
    except Exception:
        pass


def yield_s() -> float:
    """Seconds the warm-up waits before each step while pages are queued or running: $CTXLAB_WARMUP_YIELD_S (0: no
    waiting, at most 600), default 3; another value is named in a warning."""
    return gate.env_number("CTXLAB_WARMUP_YIELD_S", 3.0, float, 0.0, 600.0)


def _step(name: str, fn, settle_s: float = 0.0) -> None:
    if (wait := yield_s()) > 0:
        # a class that arrives now goes first (its pages build what they need themselves)
        gate.GATE.wait_quiet(wait, settle_s=min(settle_s, wait))
    t0 = time.perf_counter()
    try:
        fn()
    except Exception as e:  # a warm-up step must never take the server down
        log.warning("warm-up step %s failed: %s: %s", name, type(e).__name__, e)
    TIMES[name] = round(time.perf_counter() - t0, 2)
    timing.write(f"warmup:{name}", TIMES[name] * 1000)  # beside the pages' server times


def warm(models=None) -> dict[str, float]:
    """Run the warm-up steps in this thread (see the module docstring); returns {step: seconds}."""
    import gc

    _one_torch_thread()
    was_on = gc.isenabled()
    gc.disable()  # no full passes while millions of objects are made (each one held the GIL 0.3-1 s); freeze at the end
    try:
        _warm_steps(models)
    finally:
        if was_on:
            gc.enable()
        _step("gc_freeze", gc_freeze)
    log.info("warm-up done: %s", TIMES)
    return dict(TIMES)


def _warm_steps(models) -> None:
    from ctxlib import corpus, explore, explore_atlas

    from . import loaders

    # the first page of a class is often the teacher's, with the students a moment behind: the first step waits for
    # one quiet second
    _step("corpus", lambda: corpus.load("all"), settle_s=FIRST_SETTLE_S)
    _step("optimizer", optimizer_warm)
    _step("umap", umap_warm)
    for m in models if models is not None else loaders.model_order():
        enc, err = loaders.try_load(m)
        if enc is None:
            continue
        _step(f"nearest:{m}", lambda enc=enc: enc.type_matrix(loaders.NEAREST_VOCAB))
        if m == explore.ATLAS_DEFAULT["model"]:
            _step(f"atlas:{m}", lambda enc=enc: explore_atlas.atlas_sample(enc, explore.ATLAS_DEFAULT["word"], 300))
        if enc.kind == "elmo":
            _step(f"mix:{m}", lambda enc=enc: _mix_features(enc))


def gc_freeze() -> None:
    """Move everything alive now (models, corpus, caches: ~0.8 M objects) into Python's permanent generation, so the
    collector's full passes skip it. With them, a full pass took ~0.4-0.6 s of CPU holding the GIL, several times
    while a class ran its first pages; after, ~0.1 s. Objects made later are collected as usual."""
    import gc

    gc.collect()  # what is garbage now is not frozen
    gc.freeze()


def start() -> threading.Thread | None:
    """Once per process: set the serving torch threads and start the warm-up thread (None when CTXLAB_NO_PREWARM)."""
    global _THREAD
    if os.environ.get("CTXLAB_NO_PREWARM"):
        return None
    with _LOCK:
        if _THREAD is None:
            _set_serving_threads()
            _THREAD = threading.Thread(target=warm, daemon=True, name="ctxlab-warmup")
            _THREAD.start()
    return _THREAD

"""First-use times in a fresh process: UMAP, nearest words, the atlas's opening map, the ELMo page's live mix.

    OMP_NUM_THREADS=1 .venv/bin/python bench/first_use.py [--warm] [--models word2vec,elmo,bert,gpt]

Models load first (not timed: the home page loads them on a server's first visit). Then, timed one after another as a
user meets them:
- umap: a 2-D UMAP of 10 token vectors (Type vs token's map), numba's compiled code included;
- nearest: the nearest-words tab's vocabulary type vectors (Encoder.type_matrix(3000)), every model;
- atlas: explore_atlas.atlas_sample(ELMo, 地, 300) (the atlas's opening map), corpus loading included;
- mix: tasks.train_mix_live(ELMo, "pos", n_train=200, n_test=200, max_seconds=20) (the live mix's first run).
first_use_cpu_s: the same steps' CPU time in this thread (torch set to one thread), a loaded machine's
waiting for a core left out. `--warm` first runs the server's background warm-up (ctxlib.app.warmup.warm) and reports its steps: what a user meets
after it has finished. Run from a checkout's root: it measures that checkout (one without ctxlib.cache measures the
code before the disk cache). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, os.getcwd())
os.environ.setdefault("CTXLAB_NO_PREWARM", "1")


CPU: dict = {}  # name -> this thread's CPU seconds (what a quiet machine's wall time would be, near enough)


def timed(out: dict, name: str, fn):
    t0, c0 = time.perf_counter(), time.thread_time()
    fn()
    out[name] = round(time.perf_counter() - t0, 2)
    CPU[name] = round(time.thread_time() - c0, 2)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--warm", action="store_true")
    ap.add_argument("--models", default="word2vec,elmo,bert,gpt")
    a = ap.parse_args()
    import numpy as np

    import ctxlib
    from ctxlib import explore_atlas

    out: dict = {
        "checkout": os.getcwd(),
        "uptime": os.popen("uptime").read().strip(),
        "disk_cache": Path("ctxlib/cache.py").exists(),
    }
    if out["disk_cache"]:
        import ctxlib.app.warmup  # noqa: F401  (as app.py: points NUMBA_CACHE_DIR into the ctxlab cache)
    out["numba_cache_dir"] = os.environ.get("NUMBA_CACHE_DIR")
    t0 = time.perf_counter()
    encs = {m: ctxlib.load(m) for m in a.models.split(",")}
    out["load_models_s"] = round(time.perf_counter() - t0, 2)
    if a.warm:
        from ctxlib.app import loaders, warmup

        loaders.load_encoder = lambda name: encs[name]  # the warm-up's models are these (no Streamlit runtime here)
        import threading

        t0 = time.perf_counter()
        th = threading.Thread(target=warmup.warm, kwargs={"models": list(encs)})  # as the server: its own thread, niced
        th.start()
        th.join()
        out["warmup_steps_s"] = dict(warmup.TIMES)
        out["warmup_s"] = round(time.perf_counter() - t0, 2)
    first: dict = {}
    X = np.random.default_rng(1).normal(size=(10, 256)).astype(np.float32)
    from ctxlib.projection import project

    timed(first, "umap", lambda: project(X, "umap"))
    timed(first, "nearest", lambda: [e.type_matrix(3000) for e in encs.values()])
    if "elmo" in encs:
        timed(first, "atlas", lambda: explore_atlas.atlas_sample(encs["elmo"], "地", 300))
        from ctxlib.evaluation import tasks

        res = {}
        timed(
            first,
            "mix",
            lambda: res.update(tasks.train_mix_live(encs["elmo"], "pos", 0.0, n_train=200, n_test=200, max_seconds=20)),
        )
        out["mix_result"] = {
            k: res.get(k)
            for k in (
                "score",
                "seconds",
                "feature_seconds",
                "train_seconds",
                "n_train",
                "n_test",
                "gamma",
                "mix_weights",
            )
        }
    out["first_use_s"] = first
    out["first_use_cpu_s"] = dict(CPU)  # the calling thread's CPU time: on a loaded machine wall time is much longer
    print(json.dumps(out, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Time the ELMo page's live ScalarMix training (tasks.train_mix_live) as the page calls it.

    .venv/bin/python bench/live_mix_timing.py [--checkpoint elmo] [--tasks pos,ner,sentiment] [--seconds 60]
    .venv/bin/python bench/live_mix_timing.py --tiny      # the test suite's untrained tiny ELMo (no checkpoint needed)

The page (pages/3_ELMo_layers.py) promises a run of at most the chosen seconds (slider 5-60) plus the feature
extraction, which comes first and is cached in memory per task. For each task this prints the cold run (features
extracted) and a warm run (features cached), with the training steps done. It only measures: nothing is asserted
(this was a `< 60 s` assertion in tests/test_viz_elmo.py, which flakes on a busy machine).
Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def tiny_elmo():
    """The untrained tiny ELMo of tests/test_viz_elmo.py (the 'tiny' preset's sizes, vocabularies from 200 paragraphs)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from test_viz_elmo import build_tiny_elmo

    return build_tiny_elmo()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoint", default="elmo")
    ap.add_argument("--tiny", action="store_true", help="the untrained tiny ELMo of the tests instead of a checkpoint")
    ap.add_argument("--tasks", default="pos,ner,sentiment")
    ap.add_argument("--seconds", type=float, default=60, help="the page's slider (5-60)")
    ap.add_argument("--n", type=int, default=200, help="train and test sentences (the page uses 200)")
    args = ap.parse_args()

    import ctxlib
    from ctxlib.evaluation import tasks

    t0 = time.perf_counter()
    enc = tiny_elmo() if args.tiny else ctxlib.load(args.checkpoint)
    out = {
        "model": "tiny (untrained)" if args.tiny else args.checkpoint,
        "load_s": round(time.perf_counter() - t0, 2),
        "max_seconds": args.seconds,
        "n_train": args.n,
        "n_test": args.n,
        "runs": {},
    }
    for task in args.tasks.split(","):
        runs = []
        for kind in ("cold", "warm"):
            steps = []
            t = time.perf_counter()
            res = tasks.train_mix_live(
                enc,
                task,
                0.0,
                n_train=args.n,
                n_test=args.n,
                max_seconds=args.seconds,
                callback=lambda s, n, w: steps.append((s, n)),
            )
            wall = time.perf_counter() - t
            runs.append(
                {
                    "run": kind,
                    "wall_s": round(wall, 2),
                    "reported_s": res["seconds"],
                    "steps": list(steps[-1]) if steps else None,
                    "score": res["score"],
                }
            )
        out["runs"][task] = runs
    print(json.dumps(out, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()

"""Five students press "Train" on the ELMo page at the same moment: the server's job queue (ctxlib.jobs) in action.

    .venv/bin/python bench/queue_demo.py                       # the tests' tiny ELMo (untrained), 5 students
    .venv/bin/python bench/queue_demo.py --checkpoint elmo     # the shipped ELMo (first run per task: ~44 s of features)
    .venv/bin/python bench/queue_demo.py --students 8 --capacity 2 --seconds 5
    .venv/bin/python bench/queue_demo.py --checkpoint elmo --n 200 --seconds 20 --warm   # as a warmed-up server

Each student is a thread standing in for a page session: it waits at a barrier, calls jobs.start with the ELMo page's
work (tasks.train_mix_job: features, then the ScalarMix and head for at most --seconds), then polls like the page
does (touch, place, estimated wait) every --poll seconds until its job ends. Measured per student: the place and the
estimated wait it saw right after Start, the real wait and run time, the final state; overall: the order the jobs
ran in, whether any two ran at once beyond the capacity, and any exception; how good the end estimates were
(eta_s() at every poll over the real time left: the median while queued and while running, and at Start). Nothing is asserted; prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoint", default="", help="an ELMo checkpoint (default: the tests' untrained tiny ELMo)")
    ap.add_argument("--students", type=int, default=5)
    ap.add_argument("--capacity", type=int, default=1, help="jobs.MAX_RUNNING (the server's CTXLAB_MAX_JOBS)")
    ap.add_argument("--seconds", type=float, default=4, help="the page's 'max seconds' slider")
    ap.add_argument("--n", type=int, default=100, help="train and test sentences (the page uses 200)")
    ap.add_argument(
        "--warm",
        action="store_true",
        help="first do what the server's warm-up does (ctxlib.app.warmup): "
        "the live mix's features in memory, torch's first optimizer step",
    )
    ap.add_argument("--poll", type=float, default=0.5, help="how often a student's page polls")
    args = ap.parse_args()

    from ctxlib import jobs
    from ctxlib.evaluation import tasks

    jobs.MAX_RUNNING = args.capacity
    t0 = time.perf_counter()
    if args.checkpoint:
        import ctxlib

        enc, model = ctxlib.load(args.checkpoint), args.checkpoint
    else:
        sys.path.insert(0, str(ROOT / "tests"))
        from test_viz_elmo import build_tiny_elmo

        enc, model = build_tiny_elmo(), "tiny (untrained)"
    load_s = time.perf_counter() - t0
    if args.warm:  # as a server whose warm-up has finished (a checkout without a step skips it)
        from ctxlib.app import warmup

        for step in ("optimizer_warm",):
            getattr(warmup, step, lambda: None)()
        for task in ("pos", "ner"):
            for split in ("train", "test"):
                tasks.task_features(enc, task, split, args.n)
    task_of = lambda k: tasks.TASKS[k % 2]  # noqa: E731 - pos and ner share the features: one extraction
    barrier = threading.Barrier(args.students)
    seen: dict[int, dict] = {}
    errors: list[str] = []

    def student(k: int) -> None:
        try:
            barrier.wait(30)
            job = jobs.start(
                "elmo_mix",
                lambda j: tasks.train_mix_job(
                    j, enc, task_of(k), 0.0, n_train=args.n, n_test=args.n, max_seconds=args.seconds
                ),
                owner=f"student{k}",
                expected_s=tasks.mix_expected_s(enc, task_of(k), args.seconds, args.n, args.n),
            )
            me = seen[k] = {
                "student": k,
                "job": job.id,
                "task": task_of(k),
                "place_at_start": job.place(),
                "estimated_wait_s": round(job.wait_s(), 1),
                "estimated_end_s": round(job.eta_s(), 1),
                "places_seen": [],
            }
            polls = me["_polls"] = []
            while not job.finished:
                job.touch()
                place = job.place()
                polls.append((time.time(), job.eta_s(), place))
                if place is not None and (not me["places_seen"] or me["places_seen"][-1] != place):
                    me["places_seen"].append(place)
                job.wait(args.poll)
            me.update(
                state=job.state,
                waited_s=round((job.started or job.ended) - job.submitted, 1),
                ran_s=round(job.elapsed_s(), 1),
                ended_after_s=round(job.ended - job.submitted, 1),
                score=None if job.result is None else round(job.result["score"], 3),
                error=job.error,
                _span=(job.started, job.ended),
            )
        except Exception as e:  # noqa: BLE001 - the figure reports it
            errors.append(f"student {k}: {type(e).__name__}: {e}")

    t1 = time.perf_counter()
    threads = [threading.Thread(target=student, args=(k,)) for k in range(args.students)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rows = sorted(seen.values(), key=lambda r: r["job"])
    ratios: dict[str, list[float]] = {"queued": [], "running": []}  # estimated / actual seconds to the job's end
    for r in rows:
        end = (r.get("_span") or (None, None))[1]
        for t, eta, place in r.pop("_polls", []):
            if end is not None and place is not None and end - t > 0.5:
                ratios["queued" if place else "running"].append(eta / (end - t))
    med = lambda xs: round(statistics.median(xs), 2) if xs else None  # noqa: E731
    spans = {r["job"]: r.pop("_span", (None, None)) for r in rows}
    ran = sorted((s, j) for j, (s, _) in spans.items() if s is not None)
    events = sorted(
        [(s, 1) for s, e in spans.values() if s is not None] + [(e, -1) for s, e in spans.values() if s is not None]
    )
    most, cur = 0, 0
    for _, d in events:
        cur += d
        most = max(most, cur)
    print(
        json.dumps(
            {
                "model": model,
                "load_s": round(load_s, 1),
                "students": args.students,
                "capacity": args.capacity,
                "max_seconds": args.seconds,
                "n_train": args.n,
                "n_test": args.n,
                "total_s": round(time.perf_counter() - t1, 1),
                "places_at_start": [r["place_at_start"] for r in rows],
                "run_order": [j for _, j in ran],
                "line_order": [r["job"] for r in rows],
                "eta_over_actual_median": {k: med(v) for k, v in ratios.items()},
                "eta_over_actual_at_start": [
                    round(r["estimated_end_s"] / r["ended_after_s"], 2) if r.get("ended_after_s") else None
                    for r in rows
                ],
                "most_running_at_once": most,
                "states": [r.get("state") for r in rows],
                "errors": errors,
                "per_student": rows,
            },
            ensure_ascii=False,
        )
    )


if __name__ == "__main__":
    main()

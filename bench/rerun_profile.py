"""Server time of one page run (Home, Type vs token) as many students make it, in one process (AppTest).

    OMP_NUM_THREADS=1 .venv/bin/python bench/rerun_profile.py [--students 6] [--reps 3] [--profile home|tt]
        [--pages home tt]

Each "student" opens the page with its own sentences in the URL (a new input: the encodes miss the cache), then
reruns it `--reps - 1` times unchanged (everything cached), as a class does. Models load before the clock starts
(one untimed warm-up run per page). Server time is the page script's own wall time (widgets.record_time, kept in
session state), so AppTest's polling does not count; cpu_* is the script thread's CPU time over the same span (with
OMP_NUM_THREADS=1 torch computes in that thread), which waiting for a core on a loaded machine does not inflate. `--profile P` prints cProfile's top costs of page P's timed
runs (`--which first|rerun|reload`: only those runs). `--reloads K`: each student then opens the same link K times
in a new session, as a class reloading a page does (everything cached, nothing in the session's state). Prints one JSON object: per page, the first run's and the reruns' median/max ms.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("CTXLAB_NO_PREWARM", "1")

FRUIT = [
    "我每天吃一个苹果",
    "这个苹果又甜又脆",
    "妈妈买了一袋苹果",
    "苹果树上结满了果子",
    "他削了一个苹果",
    "秋天的苹果最好吃",
    "红红的苹果挂在枝头",
    "苹果洗干净再吃",
]
BRAND = ["苹果公司发布了新手机", "苹果手机的价格很贵", "苹果电脑的系统更新了", "他在苹果公司上班"]


def student_params(i: int) -> dict[str, dict[str, str]]:
    """Query parameters of student i on each page: sentences of its own (a new input for every student)."""
    a, b = FRUIT[i % len(FRUIT)], FRUIT[(i + 3) % len(FRUIT)]
    c = BRAND[i % len(BRAND)] + "，" * (i // len(BRAND))  # distinct text for every student
    lines = [f"{s}{'。' * (1 + i % 3)} | 水果" for s in FRUIT[:5]] + [f"{s}{'！' * (1 + i)} | 品牌" for s in BRAND]
    return {
        "home": {"lang": "en", "word": "苹果", "a": a, "b": b, "c": c},
        "tt": {"lang": "en", "set": "苹果", "word": "苹果", "s": "\n".join(lines)},
    }


def run_once(at, key: str) -> float:
    at.run(timeout=300)
    if at.exception:
        raise RuntimeError(f"{key}: {at.exception}")
    return float(at.session_state[f"{key}_server_ms"])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--students", type=int, default=6)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--profile", choices=["home", "tt"], default=None)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--reloads", type=int, default=0, help="per student: the same link opened again in a new session")
    ap.add_argument(
        "--which", choices=["all", "first", "rerun", "reload"], default="all", help="which runs --profile profiles"
    )
    ap.add_argument("--pages", nargs="+", choices=["home", "tt"], default=["home", "tt"])
    a = ap.parse_args()
    from streamlit.testing.v1 import AppTest

    files = {"home": (ROOT / "app.py", "home"), "tt": (ROOT / "pages" / "1_Type_vs_token.py", "type_token")}
    out = {"uptime": os.popen("uptime").read().strip()}
    prof = cProfile.Profile()
    # The page runs in AppTest's script thread: from its header to its record_time, profile it (--profile) and take
    # the thread's CPU time, which a loaded machine's waiting for a core does not inflate (wall time does).
    from ctxlib.app import widgets

    header, record = widgets.page_header, widgets.record_time
    cpu: list[float] = []

    def page_header(*args, **kw):
        cpu.append(time.thread_time())
        if profiling[0]:
            prof.enable()
        return header(*args, **kw)

    def record_time(*args, **kw):
        ms = record(*args, **kw)
        if profiling[0]:
            prof.disable()
        cpu[-1] = (time.thread_time() - cpu[-1]) * 1000
        return ms

    widgets.page_header, widgets.record_time = page_header, record_time
    profiling = [False]
    for page, (path, key) in ((p, files[p]) for p in a.pages):
        warm = AppTest.from_file(str(path), default_timeout=300)
        for k, v in student_params(999)[page].items():
            warm.query_params[k] = v
        t0 = time.perf_counter()
        run_once(warm, key)
        out[f"{page}_warmup_s"] = round(time.perf_counter() - t0, 1)
        first, again, cpu_first, cpu_again, reload, cpu_reload = [], [], [], [], [], []
        for i in range(a.students):
            at = AppTest.from_file(str(path), default_timeout=300)
            for k, v in student_params(i)[page].items():
                at.query_params[k] = v
            profiling[0] = a.profile == page and a.which in ("all", "first")
            first.append(run_once(at, key))
            cpu_first.append(cpu[-1])
            profiling[0] = a.profile == page and a.which in ("all", "rerun")
            for _ in range(a.reps - 1):
                again.append(run_once(at, key))
                cpu_again.append(cpu[-1])
            profiling[0] = a.profile == page and a.which in ("all", "reload")
            for _ in range(a.reloads):  # the same link in a new session (a reload): everything cached, nothing in state
                at2 = AppTest.from_file(str(path), default_timeout=300)
                for k, v in student_params(i)[page].items():
                    at2.query_params[k] = v
                reload.append(run_once(at2, key))
                cpu_reload.append(cpu[-1])
            profiling[0] = False
        out[page] = {
            "first_ms": [round(x) for x in first],
            "first_median_ms": round(statistics.median(first)),
            "rerun_median_ms": round(statistics.median(again)) if again else None,
            "rerun_max_ms": round(max(again)) if again else None,
            "cpu_first_median_ms": round(statistics.median(cpu_first)),
            "cpu_rerun_median_ms": round(statistics.median(cpu_again)) if cpu_again else None,
            "reload_median_ms": round(statistics.median(reload)) if reload else None,
            "cpu_reload_median_ms": round(statistics.median(cpu_reload)) if cpu_reload else None,
        }
    if a.profile:
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats("cumulative").print_stats(a.top)
        print(s.getvalue(), file=sys.stderr)
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(a.top)
        print(s.getvalue(), file=sys.stderr)
    print(json.dumps(out, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())

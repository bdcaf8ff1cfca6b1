"""A class at once: N simulated students run one page of the app over Streamlit's own websocket protocol.

    .venv/bin/python bench/classroom_load.py --start --page Home --students 30 --runs 3
    .venv/bin/python bench/classroom_load.py --port 8501 --page "Type vs token" --students 30 --runs 3
    .venv/bin/python bench/classroom_load.py --start --cycles 100          # sessions freed when students leave?
    .venv/bin/python bench/classroom_load.py --port 8501 --page "Type vs token" --cycles 30 --fresh --leave-after 1

Each student is one browser tab, spoken for by the protocol the frontend uses: a websocket on /_stcore/stream with
the `streamlit` subprotocol, then BackMsg `rerun_script` (the page's URL query string and page name), then
ForwardMsgs until `script_finished`. A run's time is from sending the rerun to its `script_finished`. Every student
sends its own sentences in the query string (the Home demo's ?word=&a=&b=&c=, Type vs token's ?word=&s=), built
from --seed and the student's number, so no student reuses another's cached results; a student's later runs
(--runs) are reloads of the same URL (a new connection and session each: the first run computes, the later ones
find the student's results cached). p50_by_run_s gives the median per run number.

Counted as errors: exception elements (a page that raised), error alerts (st.error), page-not-found and
compile-error endings, runs past --timeout, and connections that failed. RSS is the server process's VmRSS from
/proc/<pid>/status before and after (the pid: --pid, the one --start launched, or the process listening on the port,
found through /proc/net/tcp). --cycles K instead connects, runs the page once and disconnects K times in a row, and
reports the server's RSS along the way (Streamlit keeps a disconnected session for reconnection for
server.disconnectedSessionTTL seconds, at most 128 of them, so growth should level off; --settle waits past that
and runs once more). With --leave-after S each of those students closes the tab S seconds into its run; the server's
CPU seconds in the 3 s after the last one say whether abandoned runs were stopped.

Loopback only: the script refuses any host that is not 127.0.0.0/8 or ::1, and --start binds 127.0.0.1.
Prints one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import json
import math
import os
import random
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_STUDENTS, MAX_RUNS, MAX_CYCLES = 200, 50, 2000

# -- what each student types (written for ctxlab: varied by a name and a detail, so every student's text differs) --
NAMES = [
    "小明",
    "小红",
    "小刚",
    "小丽",
    "阿强",
    "阿珍",
    "老王",
    "李雷",
    "韩梅梅",
    "张伟",
    "王芳",
    "刘洋",
    "陈静",
    "杨帆",
    "赵磊",
    "黄婷",
    "周杰",
    "吴敏",
    "徐浩",
    "孙悦",
    "马超",
    "朱琳",
    "胡军",
    "郭靖",
    "林涛",
    "何佳",
    "高远",
    "罗兰",
    "梁晨",
    "宋雨",
]
FRUIT = [
    "{who}每天吃{n}个苹果",
    "这个苹果又甜又脆，{who}很喜欢",
    "{who}在市场买了{n}斤红富士苹果",
    "秋天到了，{who}家的苹果熟了",
    "{who}把苹果削了皮，切成{n}块",
    "{who}说青苹果有点酸",
    "果园里的苹果树结了{n}个果子",
    "{who}用苹果做了果酱",
]
BRAND = [
    "苹果公司发布了新手机，{who}想买",
    "{who}的苹果电脑又要更新系统了",
    "{who}在苹果的专卖店排了{n}个小时",
    "苹果的股价今天涨了{n}个百分点",
    "{who}用苹果手机拍了{n}张照片",
    "这家店是苹果的授权经销商，{who}去修了手机",
]


def student_params(page: str, i: int, seed: int) -> dict[str, str]:
    """Student i's query parameters for `page` (its URL path name): its own sentences where the page reads them."""
    rng = random.Random(f"{seed}:{i}")
    who = NAMES[i % len(NAMES)] + ("" if i < len(NAMES) else str(i // len(NAMES) + 1))

    def fill(t: str) -> str:
        return t.format(who=who, n=rng.randint(2, 9))

    if page == "":
        a, b = rng.sample(FRUIT, 2)
        return {"word": "苹果", "a": fill(a), "b": fill(b), "c": fill(rng.choice(BRAND))}
    if page == "Type_vs_token":
        lines = [f"{fill(t)} | 水果" for t in rng.sample(FRUIT, 5)] + [
            f"{fill(t)} | 品牌" for t in rng.sample(BRAND, 5)
        ]
        rng.shuffle(lines)
        return {"word": "苹果", "s": "\n".join(lines)}
    return {}


def page_names() -> dict[str, str]:
    """{accepted name: URL path name}: "Home" -> "", "Type vs token" / "Type_vs_token" / "1_Type_vs_token" -> "Type_vs_token"."""
    out = {"Home": "", "home": "", "": ""}
    for f in sorted((ROOT / "pages").glob("*.py")):
        path = f.stem.split("_", 1)[1] if f.stem[:1].isdigit() and "_" in f.stem else f.stem
        out.update({path: path, path.replace("_", " "): path, f.stem: path})
    return out


# -- the protocol ---------------------------------------------------------------------------------------------------
def new_tally() -> dict:
    return {"exceptions": 0, "error_alerts": 0, "page_errors": 0, "elements": 0, "first_error": None}


def scan(fwd, tally: dict) -> str | None:
    """Read one ForwardMsg into `tally`; "done" when the run ended (successfully or not), else None."""
    from streamlit.proto.Alert_pb2 import Alert
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    kind = fwd.WhichOneof("type")
    if kind == "delta" and fwd.delta.WhichOneof("type") == "new_element":
        el = fwd.delta.new_element
        tally["elements"] += 1
        what = el.WhichOneof("type")
        if what == "exception":
            tally["exceptions"] += 1
            tally["first_error"] = (
                tally["first_error"] or f"exception {el.exception.type}: {el.exception.message[:200]}"
            )
        elif what == "alert" and el.alert.format == Alert.ERROR:
            tally["error_alerts"] += 1
            tally["first_error"] = tally["first_error"] or f"st.error: {el.alert.body[:200]}"
    elif kind == "page_not_found":
        tally["page_errors"] += 1
        tally["first_error"] = tally["first_error"] or f"page not found: {fwd.page_not_found.page_name!r}"
    elif kind == "script_finished":
        status = fwd.script_finished
        if status == ForwardMsg.FINISHED_WITH_COMPILE_ERROR:
            tally["page_errors"] += 1
            tally["first_error"] = tally["first_error"] or "the script did not compile"
        if status != ForwardMsg.FINISHED_EARLY_FOR_RERUN:  # a rerun replaced this run: wait for the new one's end
            return "done"
    return None


def rerun_msg(query: str, page: str, page_hash: str = "", widgets=(), fragment_id: str = "") -> bytes:
    """A BackMsg rerun_script; `widgets`: WidgetState protos (a user's changed inputs, as the browser sends them),
    `fragment_id`: rerun only that fragment (as the browser does for a widget inside one)."""
    from streamlit.proto.BackMsg_pb2 import BackMsg

    back = BackMsg()
    back.rerun_script.query_string = query
    back.rerun_script.page_name = page
    back.rerun_script.page_script_hash = page_hash
    back.rerun_script.widget_states.SetInParent()
    back.rerun_script.widget_states.widgets.extend(widgets)
    back.rerun_script.fragment_id = fragment_id
    return back.SerializeToString()


def connect(uri: str, timeout: float):
    """A browser tab's websocket to the app (Streamlit's subprotocol, no compression, no pings): `async with`."""
    from websockets.asyncio.client import connect as ws_connect

    kw = dict(max_size=None, open_timeout=timeout, close_timeout=5, ping_interval=None, compression=None)
    return ws_connect(uri, subprotocols=["streamlit"], **kw)


async def one_session(
    uri: str, query: str, page: str, runs: int, timeout: float, leave_after: float | None = None
) -> list[dict]:
    """Connect, run the page `runs` times (the first a fresh session, the rest reruns), disconnect: a dict per run.
    A rerun here sends no widget values (a browser sends them all), so a page whose widgets hold state may draw less
    than a browser's rerun: the bench uses runs=1 and reloads. With `leave_after`, the student closes the tab that
    many seconds into its first run (if it has not ended)."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    out = []
    async with connect(uri, timeout) as ws:
        page_hash = ""
        for run in range(runs):
            tally = new_tally()
            t0 = time.perf_counter()
            await ws.send(rerun_msg(query, page, page_hash))
            deadline, done = t0 + (timeout if leave_after is None else min(timeout, leave_after)), None
            while done is None:
                left = deadline - time.perf_counter()
                if left <= 0:
                    break
                try:
                    data = await asyncio.wait_for(ws.recv(), left)
                except asyncio.TimeoutError:
                    break
                fwd = ForwardMsg()
                fwd.ParseFromString(data)
                if fwd.WhichOneof("type") == "new_session":
                    page_hash = fwd.new_session.page_script_hash or page_hash
                done = scan(fwd, tally)
            left_early = done is None and leave_after is not None
            out.append(
                {
                    "s": None if left_early else time.perf_counter() - t0,
                    "run": run + 1,
                    "left": left_early,
                    "timed_out": done is None and not left_early,
                    **tally,
                }
            )
            if done is None:
                break  # a session stuck past --timeout is not rerun
    return out


# -- the server process ---------------------------------------------------------------------------------------------
def require_loopback(host: str) -> None:
    try:
        addrs = {ai[4][0] for ai in socket.getaddrinfo(host, None)}
    except socket.gaierror as e:
        raise SystemExit(f"error: cannot resolve {host!r}: {e}")
    if not addrs or not all(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in addrs):
        raise SystemExit(f"error: {host!r} is not a loopback address; this load test only runs against 127.0.0.1/::1")


def listening_pid(port: int) -> int | None:
    """The pid of a process of ours listening on TCP `port` (from /proc/net/tcp{,6} and /proc/<pid>/fd)."""
    inodes = set()
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(name).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            f = row.split()
            if len(f) > 9 and f[3] == "0A" and int(f[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(f"socket:[{f[9]}]")
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            if any(os.readlink(fd) in inodes for fd in (d / "fd").iterdir()):
                return int(d.name)
        except OSError:
            continue
    return None


def rss_mb(pid: int | None) -> dict:
    """VmRSS and VmHWM (peak) of `pid` in MB, or {} when it cannot be read."""
    if pid is None:
        return {}
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return {}
    kb = {ln.split(":")[0]: int(ln.split()[1]) for ln in text.splitlines() if ln.startswith(("VmRSS", "VmHWM"))}
    return {"rss": round(kb.get("VmRSS", 0) / 1024, 1), "peak": round(kb.get("VmHWM", 0) / 1024, 1)}


def wait_idle(
    pid: int | None,
    max_s: float,
    window: float = 2.0,
    share: float = 0.05,
    *,
    cpu=None,
    clock=time.perf_counter,
    sleep=time.sleep,
) -> float | None:
    """Wait until `pid` uses under `share` of a core over `window` seconds (the server's background warm-up is done),
    at most `max_s` seconds; returns the seconds waited (None: no pid, or not idle by then). `cpu(pid)` (default
    `cpu_s`), `clock` and `sleep` can be replaced, so a test does not depend on how loaded the machine is."""
    cpu = cpu or cpu_s
    t0 = clock()
    while clock() - t0 < max_s:
        a = cpu(pid)
        sleep(window)
        b = cpu(pid)
        if a is None or b is None:
            return None
        if b - a < share * window:
            return round(clock() - t0, 1)
    return None


def cpu_s(pid: int | None) -> float | None:
    """User + system CPU seconds of `pid` so far (/proc/<pid>/stat), or None."""
    try:
        f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_health(host: str, port: int, wait_s: float, proc: subprocess.Popen | None = None) -> bool:
    """Poll http://host:port/_stcore/health until it answers 200 (True) or `wait_s` pass (False)."""
    t0 = time.time()
    while time.time() - t0 < wait_s:
        if proc is not None and proc.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(f"http://{host}:{port}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return True
        except OSError:
            time.sleep(0.3)
    return False


def start_server(app: str, port: int, wait_s: float, env: dict | None = None) -> subprocess.Popen:
    """`streamlit run app` on 127.0.0.1:port, headless; returns once /_stcore/health answers (or raises)."""
    cmd = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        app,
        "--server.port",
        str(port),
        "--server.address",
        "127.0.0.1",
        "--server.headless",
        "true",
        "--browser.gatherUsageStats",
        "false",
        "--server.fileWatcherType",
        "none",
    ]
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env={**os.environ, **(env or {})}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    if wait_health("127.0.0.1", port, wait_s, proc):
        return proc
    if proc.poll() is not None:
        raise RuntimeError(f"streamlit exited with {proc.returncode}: {proc.stderr.read()[-500:]}")
    stop_server(proc)
    raise RuntimeError(f"streamlit did not answer on port {port} within {wait_s:.0f} s")


def stop_server(proc: subprocess.Popen, wait_s: float = 10) -> None:
    """SIGTERM, then SIGKILL when the server has not stopped within `wait_s` (a busy machine can take longer to shut
    Streamlit down; what was measured must not be lost to a traceback)."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(wait_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


# -- the load ---------------------------------------------------------------------------------------------------------
def percentile(xs: list[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100) of xs; None for no values."""
    if not xs:
        return None
    s = sorted(xs)
    return s[max(0, math.ceil(q / 100 * len(s)) - 1)]


def load_avg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def query_for(page: str, i: int, seed: int, lang: str, extra: str = "") -> str:
    """Student i's query string: lang, its own sentences, then `extra` ("k=v&..." from --query) over them."""
    return urllib.parse.urlencode(
        {"lang": lang, **student_params(page, i, seed), **dict(urllib.parse.parse_qsl(extra))}
    )


async def classroom(
    uri: str, page: str, students: int, runs: int, timeout: float, seed: int, lang: str, ramp: float, extra: str = ""
) -> tuple[list[dict], list[str]]:
    async def student(i: int):
        await asyncio.sleep(ramp * i / max(1, students))
        q = query_for(page, i, seed, lang, extra)
        out = []
        for r in range(runs):  # each run a reload: a new connection and session, the same URL
            got = await one_session(uri, q, page, 1, timeout)
            out.extend({**g, "run": r + 1} for g in got)
            if any(g["timed_out"] for g in got):
                break
        return out

    got = await asyncio.gather(*(student(i) for i in range(students)), return_exceptions=True)
    results, failures = [], []
    for g in got:
        if isinstance(g, BaseException):
            failures.append(f"{type(g).__name__}: {g}"[:200])
        else:
            results.extend(g)
    return results, failures


async def cycle_load(
    uri: str,
    page: str,
    cycles: int,
    timeout: float,
    seed: int,
    lang: str,
    pid: int | None,
    extra: str = "",
    fresh: bool = False,
    settle: float = 0.0,
    leave_after: float | None = None,
):
    """Connect, run once, disconnect, `cycles` times; RSS after cycles 1, 10, 25, 50, 100, ... and the last. Every
    cycle is student 0 reopening the page (the same sentences: what grows is sessions, not the caches), or with
    `fresh` student k's own sentences (the caches fill too, up to their max_entries)."""
    marks = {1, 10, 25, 50, 100, 200, 500, 1000, cycles}
    results, failures, curve, info = [], [], [], {}
    for k in range(1, cycles + 1):
        q = query_for(page, k if fresh else 0, seed, lang, extra)
        try:
            results.extend(await one_session(uri, q, page, 1, timeout, leave_after))
        except Exception as e:  # noqa: BLE001 - a failed connection is a counted error, not the end of the bench
            failures.append(f"{type(e).__name__}: {e}"[:200])
        if k in marks:
            await asyncio.sleep(0.5)  # let the server run its disconnect
            curve.append([k, rss_mb(pid).get("rss")])
    if leave_after is not None:  # does the server stop the abandoned runs? its CPU time over the next 3 s
        c0 = cpu_s(pid)
        await asyncio.sleep(3)
        info["server_cpu_s_in_3s_after"] = None if c0 is None else round(cpu_s(pid) - c0, 2)
    if settle > 0:  # past the reconnect TTL, one more student: the stored sessions expire as it is saved
        await asyncio.sleep(settle)
        q = query_for(page, 0, seed, lang, extra)
        try:
            results.extend(await one_session(uri, q, page, 1, timeout))
        except Exception as e:  # noqa: BLE001
            failures.append(f"{type(e).__name__}: {e}"[:200])
        await asyncio.sleep(0.5)
        curve.append([f"{cycles}+{settle:.0f}s+1", rss_mb(pid).get("rss")])
    return results, failures, {"rss_curve_mb": curve, **info}


def summary(results: list[dict], failures: list[str]) -> dict:
    ok_times = [r["s"] for r in results if r["s"] is not None and not r["timed_out"]]
    counts = {k: sum(r[k] for r in results) for k in ("exceptions", "error_alerts", "page_errors")}
    counts["timeouts"] = sum(r["timed_out"] for r in results)
    left = sum(r.get("left", False) for r in results)  # closed mid-run on purpose (--leave-after): not an error
    counts["connect_errors"] = len(failures)
    first = next((r["first_error"] for r in results if r["first_error"]), None) or (failures[0] if failures else None)
    r3 = lambda x: None if x is None else round(x, 3)  # noqa: E731
    return {
        "n_runs": len(results),
        "p50_s": r3(percentile(ok_times, 50)),
        "p95_s": r3(percentile(ok_times, 95)),
        "max_s": r3(max(ok_times, default=None)),
        "left_mid_run": left,
        "mean_s": r3(sum(ok_times) / len(ok_times) if ok_times else None),
        "p50_by_run_s": [
            r3(percentile([r["s"] for r in results if r["run"] == k and r["s"] is not None and not r["timed_out"]], 50))
            for k in sorted({r["run"] for r in results})
        ],  # the first run is a fresh session
        "errors": sum(counts.values()),
        **counts,
        "first_error": first,
        "elements_per_run": round(sum(r["elements"] for r in results) / max(1, len(results)), 1),
    }


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", default=None, help="the app's base URL, e.g. http://127.0.0.1:8501 (loopback only)")
    p.add_argument("--port", type=int, default=None, help="the app on 127.0.0.1:PORT (instead of --url)")
    p.add_argument(
        "--start", action="store_true", help="start `streamlit run APP` on a free 127.0.0.1 port, stop it at the end"
    )
    p.add_argument("--app", default="app.py", help="the script --start runs (default app.py)")
    p.add_argument("--pid", type=int, default=None, help="the server's pid for RSS (default: found from the port)")
    p.add_argument("--page", default="Home", help='"Home", "Type vs token", ... (a page file name or its URL path)')
    p.add_argument("--students", type=int, default=30, help=f"simultaneous sessions (1..{MAX_STUDENTS})")
    p.add_argument("--runs", type=int, default=3, help=f"runs per student (1..{MAX_RUNS})")
    p.add_argument(
        "--cycles",
        type=int,
        default=0,
        help=f"instead: connect, run once, disconnect, this many times (..{MAX_CYCLES})",
    )
    p.add_argument("--fresh", action="store_true", help="with --cycles: new sentences every cycle (default: the same)")
    p.add_argument(
        "--settle",
        type=float,
        default=0.0,
        help="with --cycles: then wait so many seconds (e.g. 130, past the 120 s reconnect TTL) and run one more",
    )
    p.add_argument(
        "--leave-after",
        type=float,
        default=None,
        help="with --cycles: each student closes its tab so many seconds into the run (left mid-run)",
    )
    p.add_argument("--timeout", type=float, default=120.0, help="seconds one run may take before it counts as an error")
    p.add_argument("--max-seconds", type=float, default=1800.0, help="the whole load stops after this (an error)")
    p.add_argument(
        "--ramp", type=float, default=0.0, help="spread the students' first connections over so many seconds"
    )
    p.add_argument("--seed", type=int, default=0, help="varies the students' sentences")
    p.add_argument("--lang", default="zh", choices=["zh", "en"])
    p.add_argument(
        "--query", default="", help='extra query parameters over every student\'s, e.g. "proj=pca&models=bert"'
    )
    p.add_argument(
        "--warmup", type=int, default=1, help="runs by one extra session before the class, not timed (0: none)"
    )
    p.add_argument(
        "--pause", type=float, default=0.0, help="seconds to wait after the warm-up, before RSS and the class"
    )
    p.add_argument(
        "--until-idle",
        type=float,
        default=0.0,
        help="then wait (at most so many seconds) until the server is idle: its background warm-up done, as "
        "when a teacher opens the app before class; the output's idle_wait_s says how long (0: no wait)",
    )
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if not (
        1 <= args.students <= MAX_STUDENTS
        and 1 <= args.runs <= MAX_RUNS
        and 0 <= args.cycles <= MAX_CYCLES
        and 0 < args.timeout <= 3600
        and 0 < args.max_seconds <= 4 * 3600
        and args.warmup >= 0
        and 0 <= args.pause <= 600
        and 0 <= args.until_idle <= 1800
    ):
        print(
            f"error: --students 1..{MAX_STUDENTS}, --runs 1..{MAX_RUNS}, --cycles 0..{MAX_CYCLES}, --timeout and "
            "--max-seconds positive",
            file=sys.stderr,
        )
        return 2
    pages = page_names()
    if args.page not in pages:
        print(
            f"error: unknown page {args.page!r}; choose from Home, {', '.join(sorted({v for v in pages.values() if v}))}",
            file=sys.stderr,
        )
        return 2
    page = pages[args.page]
    proc = None
    if args.start:
        port = args.port or free_port()
        host = "127.0.0.1"
        try:
            proc = start_server(args.app, port, wait_s=180)
        except RuntimeError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    else:
        if args.url is None and args.port is None:
            print("error: give --url, --port or --start", file=sys.stderr)
            return 2
        u = urllib.parse.urlsplit(args.url or f"http://127.0.0.1:{args.port}")
        host, port = u.hostname or "", u.port or (443 if u.scheme == "https" else 80)
        require_loopback(host)
        if not wait_health(host, port, 120):
            print(f"error: no Streamlit server answers on {host}:{port} (/_stcore/health)", file=sys.stderr)
            return 2
    uri = f"ws://{'[' + host + ']' if ':' in host else host}:{port}/_stcore/stream"
    pid = args.pid or (proc.pid if proc else listening_pid(port))
    warm, curve, before, t0, idle_wait = [], None, {}, time.perf_counter(), None
    try:
        try:
            if args.warmup:  # the first run of a fresh server loads the models: not what a class waits for each time
                w, wf = asyncio.run(
                    asyncio.wait_for(
                        classroom(
                            uri, page, 1, args.warmup, args.timeout, args.seed + 10_000, args.lang, 0, args.query
                        ),
                        args.max_seconds,
                    )
                )
                warm = [r["first_error"] for r in w if r["first_error"] or r["timed_out"]] + wf
            time.sleep(args.pause)  # e.g. the home page's corpus prewarm, a background thread, is done by then
            idle_wait = wait_idle(pid, args.until_idle) if args.until_idle > 0 else None
            before, t0 = rss_mb(pid), time.perf_counter()
            if args.cycles:
                results, failures, curve = asyncio.run(
                    asyncio.wait_for(
                        cycle_load(
                            uri,
                            page,
                            args.cycles,
                            args.timeout,
                            args.seed,
                            args.lang,
                            pid,
                            args.query,
                            args.fresh,
                            args.settle,
                            args.leave_after,
                        ),
                        args.max_seconds,
                    )
                )
            else:
                results, failures = asyncio.run(
                    asyncio.wait_for(
                        classroom(
                            uri,
                            page,
                            args.students,
                            args.runs,
                            args.timeout,
                            args.seed,
                            args.lang,
                            args.ramp,
                            args.query,
                        ),
                        args.max_seconds,
                    )
                )
        except (asyncio.TimeoutError, TimeoutError):
            results, failures = [], [f"the whole load ran past --max-seconds {args.max_seconds:.0f}"]
        wall = time.perf_counter() - t0
        time.sleep(0.5)
        after = rss_mb(pid)
    finally:
        if proc is not None:
            stop_server(proc)
    out = {
        "page": args.page,
        "url_path": page,
        "students": 1 if args.cycles else args.students,
        "runs": 1 if args.cycles else args.runs,
        "cycles": args.cycles,
        "seed": args.seed,
        **summary(results, failures),
        "wall_s": round(wall, 2),
        "server_pid": pid,
        "rss_before_mb": before.get("rss"),
        "rss_after_mb": after.get("rss"),
        "rss_peak_mb": after.get("peak"),
        "loadavg": load_avg(),
        "started": bool(args.start),
        "warmup_errors": len(warm),
        "idle_wait_s": idle_wait,
    }
    out.update(curve or {})  # --cycles: the RSS curve (and the CPU after students left mid-run)
    print(json.dumps(out, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())

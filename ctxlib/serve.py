"""Serve the app to a class: HAProxy in front of N Streamlit processes, each student kept on one of them by a cookie.

    python -m ctxlib serve --workers 2 --port 8501          # http://127.0.0.1:8501, Ctrl-C stops everything

One Streamlit process runs every session's script on one Python interpreter, so a class of 30 shares its cores
through one GIL. Here N `streamlit run app.py` processes (backends) listen on 127.0.0.1, and HAProxy, a Debian
package (`apt-get install haproxy`), listens on --host:--port in front of them.

Why HAProxy and not nginx: a Streamlit session lives in one process (its websocket /_stcore/stream, the media files
/media/..., uploads /_stcore/upload_file/<session>/..., component files). Free nginx can only pin a client by a hash
(`ip_hash`, `hash $remote_addr`), and a school's students behind one NAT share an address, so they would all land on
one backend; cookie stickiness (`sticky cookie`) is nginx Plus only. HAProxy's `cookie ... insert` is real cookie
stickiness in the free version: the first response sets CTXLAB_BACKEND=s<i>, and every later request of that browser,
the websocket upgrade included, goes to s<i>. HAProxy also passes websocket upgrades and the Host header as they are,
has no request-body limit (Streamlit's own server.maxUploadSize applies), and checks each backend's /_stcore/health.

The config, pid-free foreground proxy and all logs go to a run directory (a temp dir, never the repo), so the same
command works as a normal user. Each backend and the proxy run in their own process group; on Ctrl-C/SIGTERM the
proxy stops first, then every backend group gets SIGTERM (SIGKILL after a grace period), so nothing is left behind.
A backend that dies is restarted (a few times); HAProxy sends its students to the others meanwhile.

Several machines: the same proxy, more backends. Start `streamlit run app.py --server.address 0.0.0.0
--server.port P --server.headless true` on each other machine and list them with --remote HOST:P (docs/serving.md, "A
bigger class on several machines").

Here: the command (`main`, `add_arguments`); the plan it checks and works out (ports, config, commands) is in
ctxlib.serve_config, the processes it runs (Supervisor) in ctxlib.serve_proc.
"""

from __future__ import annotations

import argparse
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .serve_config import (
    INSTALL_HINT,
    ServeError,
    backend_command,
    find_haproxy,
    make_plan,
    parse_remote,
    proxy_command,
    public_url,
)
from .serve_proc import Stop, Supervisor, port_in_use, raise_stop


def main(args, say=print) -> int:
    """`python -m ctxlib serve`: the exit code (0 after a clean stop, 1 if something failed, 2 for a user error)."""
    remotes = list(args.remote or [])
    try:
        plan = make_plan(args.workers, args.port, args.host, args.backend_port_base, remotes)
    except ServeError as e:
        say(f"error: {e}", file=sys.stderr)
        return 2
    haproxy = find_haproxy()
    conf_path = Path(args.run_dir or "<run dir>") / "haproxy.cfg"
    plan.commands = {b.name: backend_command(b.port) for b in plan.backends if b.local}
    plan.commands["proxy"] = proxy_command(haproxy or "haproxy", conf_path)
    if args.dry_run:
        return _dry_run(plan, haproxy, say)
    if haproxy is None:
        say(f"error: {INSTALL_HINT}", file=sys.stderr)
        return 2
    busy = [
        p
        for p in [plan.port] + [b.port for b in plan.backends if b.local]
        if port_in_use(plan.host if p == plan.port else "127.0.0.1", p)
    ]
    if busy:
        say(
            f"error: port(s) {', '.join(map(str, busy))} already in use; choose --port / --backend-port-base",
            file=sys.stderr,
        )
        return 2
    run_dir = Path(args.run_dir) if args.run_dir else Path(tempfile.mkdtemp(prefix="ctxlab-serve-"))
    run_dir.mkdir(parents=True, exist_ok=True)
    plan.run_dir = run_dir
    conf_path = run_dir / "haproxy.cfg"
    conf_path.write_text(plan.config, encoding="utf-8")
    plan.commands["proxy"] = proxy_command(haproxy, conf_path)
    why = _config_rejected(haproxy, conf_path)
    if why:  # e.g. a --remote host name that does not resolve
        say(f"error: haproxy rejects the config {conf_path}: {why}", file=sys.stderr)
        return 2

    sup = Supervisor(plan, haproxy, say)
    stop_signals = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)  # Ctrl-C, kill, the terminal closed
    old = {s: signal.signal(s, raise_stop) for s in stop_signals}
    rc = 0
    try:
        sup.start(args.start_timeout)
        n_local = sum(b.local for b in plan.backends)
        where = f"{n_local} local" + (
            f" + {len(plan.backends) - n_local} remote" if n_local < len(plan.backends) else ""
        )
        say(
            f"ctxlab is serving at {public_url(plan.host, plan.port)} ({where} Streamlit processes behind haproxy, "
            f"{plan.threads} torch threads each; logs in {run_dir}; Ctrl-C stops)",
            flush=True,
        )
        rc = sup.watch()
    except Stop:
        say("stopping: haproxy, then the backends (at most ~15 s)", file=sys.stderr)
    except ServeError as e:
        say(f"error: {e}", file=sys.stderr)
        rc = 1
    finally:
        for s in stop_signals:  # a second Ctrl-C must not leave children behind
            signal.signal(s, signal.SIG_IGN)
        t0 = time.monotonic()
        sup.stop()
        say(f"stopped ({time.monotonic() - t0:.1f} s)", file=sys.stderr)
        for s, h in old.items():
            signal.signal(s, h)
    return rc


def _dry_run(plan, haproxy: str | None, say) -> int:
    """--dry-run: the proxy config and the commands, nothing started."""
    say(plan.config)
    say(f"# each local backend runs with OMP_NUM_THREADS={plan.threads} MKL_NUM_THREADS={plan.threads}")
    for name, cmd in plan.commands.items():
        say(f"# {name}: {shlex.join(cmd)}")
    if haproxy is None:
        say(f"# {INSTALL_HINT}")
    return 0


def _config_rejected(haproxy: str, conf_path: Path) -> str | None:
    """Why `haproxy -c` rejects the config (its ALERT lines, else all it said), or None when it accepts it."""
    check = subprocess.run([haproxy, "-c", "-f", str(conf_path)], capture_output=True, text=True)
    if check.returncode == 0:
        return None
    lines = [ln.strip() for ln in (check.stderr + check.stdout).splitlines() if ln.strip()]
    return " | ".join([ln for ln in lines if "ALERT" in ln] or lines)


def add_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("--workers", type=int, default=2, help="Streamlit processes on this machine (default 2)")
    s.add_argument("--port", type=int, default=8501, help="the port students open (default 8501)")
    s.add_argument(
        "--host",
        default="127.0.0.1",
        help="address the proxy listens on: 127.0.0.1 (this machine, "
        "the default) or 0.0.0.0 (every interface: a class)",
    )
    s.add_argument(
        "--backend-port-base",
        type=int,
        default=None,
        help="first backend port on 127.0.0.1 (default --port + 1; worker i gets base + i)",
    )
    s.add_argument(
        "--remote",
        type=parse_remote,
        action="append",
        metavar="HOST:PORT",
        help="also send students to a Streamlit started by hand on another machine (repeatable)",
    )
    s.add_argument("--run-dir", default=None, help="where the config and logs go (default: a new temp dir)")
    s.add_argument(
        "--start-timeout", type=float, default=180.0, help="seconds to wait for the backends' health (default 180)"
    )
    s.add_argument("--dry-run", action="store_true", help="print the proxy config and the commands; start nothing")

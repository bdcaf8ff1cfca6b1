"""`python -m ctxlib serve`'s plan, worked out before anything starts: the options checked (`make_plan`, ServeError
for a user's mistake), the backends and their ports, the HAProxy config (`haproxy_config`: cookie stickiness, health
checks, websocket tunnels) and the commands and environment of each process. Why HAProxy, and how a run goes: ctxlib.serve.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import shutil
import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APP = ROOT / "app.py"
COOKIE = "CTXLAB_BACKEND"  # the stickiness cookie HAProxy inserts
INSTALL_HINT = (
    "haproxy is not installed: install it with `apt-get install haproxy` (Debian/Ubuntu); "
    "one process needs no proxy: `streamlit run app.py`"
)
HEALTH = "/_stcore/health"


@dataclass(frozen=True)
class Backend:
    name: str  # HAProxy server name and cookie value: s1, s2, ...
    host: str
    port: int
    local: bool = True  # started by this command (False: --remote, started by hand on another machine)

    @property
    def url(self) -> str:
        return f"http://{url_host(self.host)}:{self.port}"


def url_host(host: str) -> str:
    if host in ("0.0.0.0", "::", ""):
        return "127.0.0.1"
    return f"[{host}]" if ":" in host else host


def _hap_addr(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def haproxy_config(
    backends: list[Backend], *, host: str = "127.0.0.1", port: int = 8501, check_interval_s: float = 2.0
) -> str:
    """HAProxy config text: one frontend on host:port, one backend with a server per Backend, cookie-sticky.

    Pure function (no files, no processes), so it is tested directly and `serve --dry-run` prints it."""
    if not backends:
        raise ValueError("haproxy_config needs at least one backend")
    names = [b.name for b in backends]
    if len(set(names)) != len(names):
        raise ValueError(f"backend names must be unique, got {names}")
    inter = f"{int(check_interval_s * 1000)}ms"
    servers = "\n".join(
        f"    server {b.name} {_hap_addr(b.host, b.port)} cookie {b.name} check inter {inter} fall 3 rise 1"
        for b in backends
    )
    return f"""\
# written by `python -m ctxlib serve` for this run only; see ctxlib/serve.py
global
    maxconn 4096

defaults
    mode http
    option forwardfor
    timeout connect 5s
    # request headers must arrive within 30 s; the body (an upload) is not limited in time or size here:
    # Streamlit's server.maxUploadSize is the limit
    timeout http-request 30s
    timeout http-keep-alive 60s
    # inactivity on plain HTTP (a slow upload, a long media download)
    timeout client 5m
    timeout server 5m
    # after the websocket upgrade (/_stcore/stream) the connection is a tunnel: a student may read for a long while
    timeout tunnel 8h
    timeout client-fin 30s

frontend ctxlab
    bind {_hap_addr(host, port)}
    default_backend streamlit

backend streamlit
    # each new browser (no cookie yet) goes to the next backend in turn, so a class that opens the link at once is
    # split evenly (leastconn split 30 simultaneous students 12/18 here: idle keep-alive connections count);
    # the cookie then keeps all of that browser's requests, the websocket included, on the same backend
    balance roundrobin
    cookie {COOKIE} insert indirect nocache httponly
    # which backend answered, for the teacher's browser tools and the tests
    http-response set-header X-Ctxlab-Backend %[srv_name]
    option httpchk
    http-check send meth GET uri {HEALTH}
    http-check expect status 200
    # a busy backend is not a dead one: with 30 students on 2 cores /_stcore/health took over 2 s, and a 2 s check
    # timeout marked both backends down (503 for everyone). A dead backend refuses the connection at once, so it is
    # still out within fall x inter; a hung one within fall x 30 s
    timeout check 30s
    # a backend that is down: its students are sent to another one (their session starts again there)
    option redispatch
    retries 2
{servers}
"""


def threads_per_backend(workers: int, cores: int | None = None) -> int:
    """Torch/OpenMP threads for each local backend: the cores shared out, at least one."""
    if cores is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, cores // max(1, workers))


def backend_command(port: int, *, python: str = sys.executable, app: Path = APP) -> list[str]:
    return [
        python,
        "-m",
        "streamlit",
        "run",
        str(app),
        "--server.port",
        str(port),
        "--server.address",
        "127.0.0.1",
        "--server.headless",
        "true",
        "--browser.gatherUsageStats",
        "false",
    ]


def backend_env(threads: int, base: dict | None = None) -> dict:
    env = dict(os.environ if base is None else base)
    for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env[k] = str(threads)
    return env


def proxy_command(haproxy: str, conf: Path) -> list[str]:
    return [haproxy, "-f", str(conf), "-db"]  # -db: stay in the foreground, no daemon, no pid file


def find_haproxy() -> str | None:
    """The haproxy binary: $CTXLAB_HAPROXY if set (a path, or empty to act as if missing), else haproxy on PATH or
    in /usr/sbin (not on a normal user's PATH on Debian)."""
    env = os.environ.get("CTXLAB_HAPROXY")
    if env is not None:
        return env if env and os.access(env, os.X_OK) else None
    return shutil.which("haproxy") or shutil.which("haproxy", path="/usr/sbin:/usr/local/sbin")


def parse_remote(text: str) -> tuple[str, int]:
    """HOST:PORT (or [v6]:PORT) of a backend started by hand on another machine."""
    host, sep, port = text.strip().rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"--remote wants HOST:PORT, e.g. 192.168.1.12:8502, got {text!r}")
    return host, int(port)


@dataclass
class Plan:
    host: str
    port: int
    backends: list[Backend]
    threads: int
    config: str
    run_dir: Path | None = None
    commands: dict[str, list[str]] = field(default_factory=dict)


class ServeError(Exception):
    """A user error: exit 2 with one line."""


def _check_port(p: int, what: str) -> None:
    if not 0 < p < 65536:
        raise ServeError(f"{what} must be between 1 and 65535, got {p}")


def make_plan(
    workers: int,
    port: int,
    host: str,
    backend_port_base: int | None = None,
    remotes: list[tuple[str, int]] | None = None,
    cores: int | None = None,
) -> Plan:
    """Check the options and work out backends, ports and the config; raises ServeError on bad options."""
    remotes = remotes or []
    if workers < 0:
        raise ServeError(f"--workers must be 0 or more, got {workers}")
    if workers == 0 and not remotes:
        raise ServeError("--workers 0 serves nothing; give --workers N, or --remote HOST:PORT backends")
    if workers > 64:
        raise ServeError(f"--workers {workers} is more than 64; each worker is a whole Python process with the models")
    _check_port(port, "--port")
    try:
        ipaddress.ip_address(host)
    except ValueError:
        raise ServeError(
            f"--host must be an IP address (127.0.0.1 for this machine, 0.0.0.0 for a class), got {host!r}"
        )
    base = port + 1 if backend_port_base is None else backend_port_base
    local_ports = list(range(base, base + workers))
    for p in local_ports:
        _check_port(p, "--backend-port-base + worker")
    if port in local_ports:
        raise ServeError(
            f"the backends' ports {local_ports[0]}-{local_ports[-1]} include --port {port}; "
            "choose another --backend-port-base"
        )
    backends = [Backend(f"s{i + 1}", "127.0.0.1", p) for i, p in enumerate(local_ports)]
    seen = {("127.0.0.1", p) for p in local_ports}
    for h, p in remotes:
        if (h, p) in seen:
            raise ServeError(f"--remote {h}:{p} is listed twice or is a local worker's port")
        seen.add((h, p))
        backends.append(Backend(f"s{len(backends) + 1}", h, p, local=False))
    threads = threads_per_backend(workers, cores)
    return Plan(host, port, backends, threads, haproxy_config(backends, host=host, port=port))


def public_url(host: str, port: int) -> str:
    """The URL to give students: for 0.0.0.0, this machine's address on the network it routes through."""
    if host not in ("0.0.0.0", "::"):
        return f"http://{url_host(host)}:{port}"
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("10.255.255.255", 1))  # UDP connect sends nothing; it only picks the outgoing interface
            ip = s.getsockname()[0]
        if ipaddress.ip_address(ip).is_loopback:  # a route only through lo: students could not reach that address
            raise OSError(ip)
    except OSError:
        ip = socket.gethostname()
    return f"http://{ip}:{port}"

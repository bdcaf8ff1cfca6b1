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
"""
from __future__ import annotations

import argparse
import ipaddress
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APP = ROOT / "app.py"
COOKIE = "CTXLAB_BACKEND"  # the stickiness cookie HAProxy inserts
INSTALL_HINT = ("haproxy is not installed: install it with `apt-get install haproxy` (Debian/Ubuntu); "
                "one process needs no proxy: `streamlit run app.py`")
HEALTH = "/_stcore/health"
MAX_RESTARTS = 3  # per backend, per serve run


@dataclass(frozen=True)
class Backend:
    name: str  # HAProxy server name and cookie value: s1, s2, ...
    host: str
    port: int
    local: bool = True  # started by this command (False: --remote, started by hand on another machine)

    @property
    def url(self) -> str:
        return f"http://{_url_host(self.host)}:{self.port}"


def _url_host(host: str) -> str:
    if host in ("0.0.0.0", "::", ""):
        return "127.0.0.1"
    return f"[{host}]" if ":" in host else host


def _hap_addr(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def haproxy_config(backends: list[Backend], *, host: str = "127.0.0.1", port: int = 8501,
                   check_interval_s: float = 2.0) -> str:
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
        for b in backends)
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
    return [python, "-m", "streamlit", "run", str(app), "--server.port", str(port), "--server.address", "127.0.0.1",
            "--server.headless", "true", "--browser.gatherUsageStats", "false"]


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


def make_plan(workers: int, port: int, host: str, backend_port_base: int | None = None,
              remotes: list[tuple[str, int]] | None = None, cores: int | None = None) -> Plan:
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
        raise ServeError(f"--host must be an IP address (127.0.0.1 for this machine, 0.0.0.0 for a class), got {host!r}")
    base = port + 1 if backend_port_base is None else backend_port_base
    local_ports = list(range(base, base + workers))
    for p in local_ports:
        _check_port(p, "--backend-port-base + worker")
    if port in local_ports:
        raise ServeError(f"the backends' ports {local_ports[0]}-{local_ports[-1]} include --port {port}; "
                         "choose another --backend-port-base")
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
        return f"http://{_url_host(host)}:{port}"
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("10.255.255.255", 1))  # UDP connect sends nothing; it only picks the outgoing interface
            ip = s.getsockname()[0]
        if ipaddress.ip_address(ip).is_loopback:  # a route only through lo: students could not reach that address
            raise OSError(ip)
    except OSError:
        ip = socket.gethostname()
    return f"http://{ip}:{port}"


def _port_in_use(host: str, port: int) -> bool:
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(fam, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return True
    return False


_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never through $http_proxy


def _healthy(url: str, timeout: float = 2.0) -> bool:
    try:
        with _DIRECT.open(url + HEALTH, timeout=timeout) as r:
            return r.status == 200
    except OSError:
        return False


def _served_by(proxy_url: str, name: str) -> str | None:
    """Which backend the proxy sends a browser holding the cookie for `name` to (None: no answer)."""
    req = urllib.request.Request(proxy_url + HEALTH, headers={"Cookie": f"{COOKIE}={name}"})
    try:
        with _DIRECT.open(req, timeout=1.0) as r:
            return r.headers.get("X-Ctxlab-Backend") if r.status == 200 else None
    except OSError:
        return None


def _die_with_parent() -> None:
    """In the child before exec: get SIGTERM if `serve` itself is killed (even with SIGKILL), so no backend or proxy
    outlives it. Linux only; elsewhere the signal handlers below still stop everything on Ctrl-C/SIGTERM."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:
        pass


class _Stop(Exception):
    pass


def _raise_stop(signum, frame):
    raise _Stop(signum)


class Supervisor:
    """Starts the backends and the proxy, each in its own process group, restarts dead backends, stops them all."""

    def __init__(self, plan: Plan, haproxy: str, say=print):
        self.plan, self.haproxy, self.say = plan, haproxy, say
        self.procs: dict[str, subprocess.Popen] = {}
        self.restarts: dict[str, int] = {}
        self.logs: list = []

    def _spawn(self, name: str, cmd: list[str], env: dict | None = None) -> subprocess.Popen:
        log = open(self.plan.run_dir / f"{name}.log", "ab")
        self.logs.append(log)
        p = subprocess.Popen(cmd, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                             start_new_session=True, preexec_fn=_die_with_parent if sys.platform == "linux" else None)
        self.procs[name] = p
        return p

    def start_backend(self, b: Backend) -> None:
        self._spawn(b.name, self.plan.commands[b.name], backend_env(self.plan.threads))

    def log_tail(self, name: str, n: int = 15) -> str:
        try:
            lines = (self.plan.run_dir / f"{name}.log").read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(lines[-n:])

    def start(self, timeout: float) -> None:
        """Start the local backends; once each answers /_stcore/health, start the proxy (its first checks then find
        them up) and wait until each is reached through it with its cookie. ServeError if a process exits or the
        time is up. Remote backends only get a warning: HAProxy adds them once they answer."""
        deadline = time.monotonic() + timeout
        local = [b for b in self.plan.backends if b.local]
        for b in local:
            self.start_backend(b)
        pending = {b.name: b for b in local}
        while pending:
            for name, b in list(pending.items()):
                if self.procs[name].poll() is not None:
                    raise ServeError(f"backend {name} (port {b.port}) exited with code {self.procs[name].returncode}:\n"
                                     f"{self.log_tail(name)}")
                if _healthy(b.url, timeout=1.0):
                    del pending[name]
            if pending and time.monotonic() > deadline:
                raise ServeError(f"backends {', '.join(pending)} did not answer {HEALTH} within {timeout:.0f} s "
                                 f"(logs in {self.plan.run_dir})")
            if pending:
                time.sleep(0.3)
        for b in self.plan.backends:
            if not b.local and not _healthy(b.url, timeout=2.0):
                self.say(f"warning: remote backend {b.name} {b.host}:{b.port} does not answer {HEALTH} yet; "
                         "haproxy sends students there once it does", file=sys.stderr)
        self._spawn("proxy", self.plan.commands["proxy"])
        proxy_url = f"http://{_url_host(self.plan.host)}:{self.plan.port}"
        pending = {b.name for b in local}
        while pending:
            if self.procs["proxy"].poll() is not None:
                raise ServeError(f"haproxy exited with code {self.procs['proxy'].returncode}:\n{self.log_tail('proxy')}")
            pending = {name for name in pending if _served_by(proxy_url, name) != name}
            if pending and time.monotonic() > deadline:
                raise ServeError(f"the proxy on {proxy_url} does not reach {', '.join(sorted(pending))} "
                                 f"(log: {self.plan.run_dir / 'proxy.log'})")
            if pending:
                time.sleep(0.3)

    def watch(self) -> int:
        """Until a signal (_Stop) or the proxy exits; restarts a backend that died, MAX_RESTARTS times each."""
        while True:
            time.sleep(0.5)
            if self.procs["proxy"].poll() is not None:
                self.say(f"haproxy exited with code {self.procs['proxy'].returncode}:\n{self.log_tail('proxy')}",
                         file=sys.stderr)
                return 1
            for b in self.plan.backends:
                p = self.procs.get(b.name)
                if p is None or p.poll() is None:
                    continue
                n = self.restarts.get(b.name, 0)
                if n >= MAX_RESTARTS:
                    if n == MAX_RESTARTS:
                        self.restarts[b.name] = n + 1
                        self.say(f"backend {b.name} exited again with code {p.returncode}; not restarting it "
                                 f"(log: {self.plan.run_dir / (b.name + '.log')}); the others go on", file=sys.stderr)
                    continue
                self.restarts[b.name] = n + 1
                self.say(f"backend {b.name} (port {b.port}) exited with code {p.returncode}; restarting it "
                         f"({n + 1}/{MAX_RESTARTS}); log: {self.plan.run_dir / (b.name + '.log')}", file=sys.stderr)
                self.start_backend(b)

    def stop(self, grace: float = 10.0) -> None:
        """SIGTERM the proxy's group first (no new requests), then every backend's group; SIGKILL what is left."""
        order = ["proxy"] + [n for n in self.procs if n != "proxy"]
        for name in order:
            p = self.procs.get(name)
            if p is not None and p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
            if name == "proxy" and p is not None:
                try:
                    p.wait(3)
                except subprocess.TimeoutExpired:
                    pass
        deadline = time.monotonic() + grace
        for p in self.procs.values():
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        for p in self.procs.values():  # the group too: a process the page started (a training job) goes with it
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            p.wait()
        for f in self.logs:
            f.close()


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
        say(plan.config)
        say(f"# each local backend runs with OMP_NUM_THREADS={plan.threads} MKL_NUM_THREADS={plan.threads}")
        for name, cmd in plan.commands.items():
            say(f"# {name}: {shlex.join(cmd)}")
        if haproxy is None:
            say(f"# {INSTALL_HINT}")
        return 0
    if haproxy is None:
        say(f"error: {INSTALL_HINT}", file=sys.stderr)
        return 2
    busy = [p for p in [plan.port] + [b.port for b in plan.backends if b.local]
            if _port_in_use(plan.host if p == plan.port else "127.0.0.1", p)]
    if busy:
        say(f"error: port(s) {', '.join(map(str, busy))} already in use; choose --port / --backend-port-base",
            file=sys.stderr)
        return 2
    run_dir = Path(args.run_dir) if args.run_dir else Path(tempfile.mkdtemp(prefix="ctxlab-serve-"))
    run_dir.mkdir(parents=True, exist_ok=True)
    plan.run_dir = run_dir
    conf_path = run_dir / "haproxy.cfg"
    conf_path.write_text(plan.config, encoding="utf-8")
    plan.commands["proxy"] = proxy_command(haproxy, conf_path)
    check = subprocess.run([haproxy, "-c", "-f", str(conf_path)], capture_output=True, text=True)
    if check.returncode != 0:  # e.g. a --remote host name that does not resolve
        lines = [ln.strip() for ln in (check.stderr + check.stdout).splitlines() if ln.strip()]
        why = " | ".join([ln for ln in lines if "ALERT" in ln] or lines)
        say(f"error: haproxy rejects the config {conf_path}: {why}", file=sys.stderr)
        return 2

    sup = Supervisor(plan, haproxy, say)
    stop_signals = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)  # Ctrl-C, kill, the terminal closed
    old = {s: signal.signal(s, _raise_stop) for s in stop_signals}
    rc = 0
    try:
        sup.start(args.start_timeout)
        n_local = sum(b.local for b in plan.backends)
        where = f"{n_local} local" + (f" + {len(plan.backends) - n_local} remote" if n_local < len(plan.backends) else "")
        say(f"ctxlab is serving at {public_url(plan.host, plan.port)} ({where} Streamlit processes behind haproxy, "
            f"{plan.threads} torch threads each; logs in {run_dir}; Ctrl-C stops)", flush=True)
        rc = sup.watch()
    except _Stop:
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


def add_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("--workers", type=int, default=2, help="Streamlit processes on this machine (default 2)")
    s.add_argument("--port", type=int, default=8501, help="the port students open (default 8501)")
    s.add_argument("--host", default="127.0.0.1", help="address the proxy listens on: 127.0.0.1 (this machine, "
                                                       "the default) or 0.0.0.0 (every interface: a class)")
    s.add_argument("--backend-port-base", type=int, default=None,
                   help="first backend port on 127.0.0.1 (default --port + 1; worker i gets base + i)")
    s.add_argument("--remote", type=parse_remote, action="append", metavar="HOST:PORT",
                   help="also send students to a Streamlit started by hand on another machine (repeatable)")
    s.add_argument("--run-dir", default=None, help="where the config and logs go (default: a new temp dir)")
    s.add_argument("--start-timeout", type=float, default=180.0, help="seconds to wait for the backends' health")
    s.add_argument("--dry-run", action="store_true", help="print the proxy config and the commands; start nothing")

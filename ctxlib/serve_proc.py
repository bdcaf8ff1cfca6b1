"""`python -m ctxlib serve`'s processes: the `Supervisor` that starts the backends and the proxy (each in its own process
group), restarts a backend that dies and stops them all, and the checks it makes on the way (`port_in_use`,
`healthy`: a backend's /_stcore/health, through no $http_proxy). The plan it runs comes from ctxlib.serve_config.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

from .serve_config import COOKIE, HEALTH, ROOT, Backend, Plan, ServeError, backend_env, url_host

MAX_RESTARTS = 3  # per backend, per serve run


def port_in_use(host: str, port: int) -> bool:
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(fam, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return True
    return False


_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never through $http_proxy


def healthy(url: str, timeout: float = 2.0) -> bool:
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


class Stop(Exception):
    """A stop signal (Ctrl-C, SIGTERM, SIGHUP) while serving."""


def raise_stop(signum, frame):
    raise Stop(signum)


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
        p = subprocess.Popen(
            cmd,
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent if sys.platform == "linux" else None,
        )
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
                    raise ServeError(
                        f"backend {name} (port {b.port}) exited with code {self.procs[name].returncode}:\n"
                        f"{self.log_tail(name)}"
                    )
                if healthy(b.url, timeout=1.0):
                    del pending[name]
            if pending and time.monotonic() > deadline:
                raise ServeError(
                    f"backends {', '.join(pending)} did not answer {HEALTH} within {timeout:.0f} s "
                    f"(logs in {self.plan.run_dir})"
                )
            if pending:
                time.sleep(0.3)
        for b in self.plan.backends:
            if not b.local and not healthy(b.url, timeout=2.0):
                self.say(
                    f"warning: remote backend {b.name} {b.host}:{b.port} does not answer {HEALTH} yet; "
                    "haproxy sends students there once it does",
                    file=sys.stderr,
                )
        self._spawn("proxy", self.plan.commands["proxy"])
        proxy_url = f"http://{url_host(self.plan.host)}:{self.plan.port}"
        pending = {b.name for b in local}
        while pending:
            if self.procs["proxy"].poll() is not None:
                raise ServeError(
                    f"haproxy exited with code {self.procs['proxy'].returncode}:\n{self.log_tail('proxy')}"
                )
            pending = {name for name in pending if _served_by(proxy_url, name) != name}
            if pending and time.monotonic() > deadline:
                raise ServeError(
                    f"the proxy on {proxy_url} does not reach {', '.join(sorted(pending))} "
                    f"(log: {self.plan.run_dir / 'proxy.log'})"
                )
            if pending:
                time.sleep(0.3)

    def watch(self) -> int:
        """Until a signal (Stop) or the proxy exits; restarts a backend that died, MAX_RESTARTS times each."""
        while True:
            time.sleep(0.5)
            if self.procs["proxy"].poll() is not None:
                self.say(
                    f"haproxy exited with code {self.procs['proxy'].returncode}:\n{self.log_tail('proxy')}",
                    file=sys.stderr,
                )
                return 1
            for b in self.plan.backends:
                p = self.procs.get(b.name)
                if p is None or p.poll() is None:
                    continue
                n = self.restarts.get(b.name, 0)
                if n >= MAX_RESTARTS:
                    if n == MAX_RESTARTS:
                        self.restarts[b.name] = n + 1
                        self.say(
                            f"backend {b.name} exited again with code {p.returncode}; not restarting it "
                            f"(log: {self.plan.run_dir / (b.name + '.log')}); the others go on",
                            file=sys.stderr,
                        )
                    continue
                self.restarts[b.name] = n + 1
                self.say(
                    f"backend {b.name} (port {b.port}) exited with code {p.returncode}; restarting it "
                    f"({n + 1}/{MAX_RESTARTS}); log: {self.plan.run_dir / (b.name + '.log')}",
                    file=sys.stderr,
                )
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

"""`python -m ctxlib serve`: the HAProxy config writer and option checks (fast), and one run of the real thing.

The integration test starts HAProxy and two Streamlit processes on free ports; it skips (saying why) when the haproxy
binary is missing, except when CTXLAB_REQUIRE_SERVE=1 (`.ci/run` sets it and installs haproxy): then it fails.
"""

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from ctxlib import serve_config, serve_proc
from ctxlib.cli import main

ROOT = Path(__file__).resolve().parent.parent


def _backends(n):
    return [serve_config.Backend(f"s{i + 1}", "127.0.0.1", 9000 + i) for i in range(n)]


def test_config_has_one_sticky_server_per_backend():
    cfg = serve_config.haproxy_config(_backends(3), host="0.0.0.0", port=8501)
    servers = re.findall(r"^\s+server (\S+) (\S+) cookie (\S+) check", cfg, re.M)
    assert servers == [("s1", "127.0.0.1:9000", "s1"), ("s2", "127.0.0.1:9001", "s2"), ("s3", "127.0.0.1:9002", "s3")]
    assert re.search(r"^\s+bind 0\.0\.0\.0:8501$", cfg, re.M)
    assert re.search(
        rf"^\s+cookie {serve_config.COOKIE} insert indirect nocache", cfg, re.M
    )  # cookie stickiness, not IP hash
    assert "balance source" not in cfg and "hash" not in cfg
    assert re.search(r"^\s+http-check send meth GET uri /_stcore/health$", cfg, re.M)
    check = re.search(r"^\s+timeout check (\d+)s$", cfg, re.M)  # a busy backend must not count as down
    assert check and int(check.group(1)) >= 10
    # websockets: HAProxy passes the upgrade by itself in http mode; a closing mode would break it, a tunnel timeout
    # shorter than a lesson would cut it
    assert "httpclose" not in cfg and "http-server-close" not in cfg
    tunnel = re.search(r"^\s+timeout tunnel (\d+)h$", cfg, re.M)
    assert tunnel and int(tunnel.group(1)) >= 2
    assert "maxbodysize" not in cfg.lower() and "http-buffer-request" not in cfg  # uploads pass, Streamlit limits them


def test_config_brackets_ipv6_and_rejects_bad_backends():
    cfg = serve_config.haproxy_config([serve_config.Backend("s1", "fd00::5", 8502, local=False)], host="::", port=8501)
    assert "bind [::]:8501" in cfg and "server s1 [fd00::5]:8502 cookie s1" in cfg
    with pytest.raises(ValueError):
        serve_config.haproxy_config([])
    with pytest.raises(ValueError):
        serve_config.haproxy_config([serve_config.Backend("s1", "a", 1), serve_config.Backend("s1", "b", 2)])


@pytest.fixture
def haproxy_or_skip():
    if serve_config.find_haproxy() is None:
        reason = "haproxy is not installed (apt-get install haproxy); .ci/run installs it"
        if os.environ.get("CTXLAB_REQUIRE_SERVE") == "1":
            pytest.fail(f"CTXLAB_REQUIRE_SERVE=1 but {reason}")
        pytest.skip(reason)


def test_haproxy_accepts_the_config(haproxy_or_skip, tmp_path):
    plan = serve_config.make_plan(3, 8501, "0.0.0.0", remotes=[("10.1.2.3", 8502)])
    conf = tmp_path / "haproxy.cfg"
    conf.write_text(plan.config)
    r = subprocess.run([serve_config.find_haproxy(), "-c", "-f", str(conf)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[WARNING]" not in r.stdout + r.stderr


def test_unresolvable_remote_is_a_user_error(haproxy_or_skip, tmp_path, capsys):
    port = _free_run(3)
    assert (
        main(["serve", "--port", str(port), "--remote", "no-such-host.invalid:8502", "--run-dir", str(tmp_path)]) == 2
    )
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "haproxy rejects the config" in err and "no-such-host.invalid" in err
    assert not serve_proc.port_in_use("127.0.0.1", port + 1)  # no backend was started


def test_plan_ports_threads_and_remotes():
    plan = serve_config.make_plan(2, 8501, "127.0.0.1", remotes=[("192.168.1.12", 8502)], cores=16)
    assert [(b.name, b.host, b.port, b.local) for b in plan.backends] == [
        ("s1", "127.0.0.1", 8502, True),
        ("s2", "127.0.0.1", 8503, True),
        ("s3", "192.168.1.12", 8502, False),
    ]
    assert plan.threads == 8
    assert serve_config.make_plan(3, 8501, "127.0.0.1", backend_port_base=9000, cores=2).threads == 1  # never 0
    assert [b.port for b in serve_config.make_plan(3, 8501, "127.0.0.1", backend_port_base=9000).backends] == [
        9000,
        9001,
        9002,
    ]
    assert serve_config.backend_env(3, base={"PATH": "/bin"}) == {
        "PATH": "/bin",
        "OMP_NUM_THREADS": "3",
        "MKL_NUM_THREADS": "3",
    }
    cmd = serve_config.backend_command(8502)
    assert cmd[1:4] == ["-m", "streamlit", "run"] and cmd[4].endswith("app.py")
    assert cmd[cmd.index("--server.address") + 1] == "127.0.0.1" and cmd[cmd.index("--server.port") + 1] == "8502"


@pytest.mark.parametrize(
    "kw, says",
    [
        (dict(workers=-1), "--workers must be 0 or more"),
        (dict(workers=0), "--workers 0 serves nothing"),
        (dict(workers=100), "more than 64"),
        (dict(port=0), "--port must be between"),
        (dict(port=70000), "--port must be between"),
        (dict(host="localhost"), "--host must be an IP address"),
        (dict(backend_port_base=65535), "--backend-port-base + worker must be between"),
        (dict(backend_port_base=8500), "include --port 8501"),
        (dict(remotes=[("127.0.0.1", 8502)]), "listed twice or is a local worker's port"),
    ],
)
def test_plan_rejects_bad_options(kw, says):
    args = dict(workers=2, port=8501, host="127.0.0.1") | kw
    with pytest.raises(serve_config.ServeError, match=re.escape(says)):
        serve_config.make_plan(**args)


@pytest.mark.parametrize("text", ["foo", "host:", ":8502", "host:0", "host:99999", "host:80x"])
def test_remote_must_be_host_port(text, capsys):
    with pytest.raises(SystemExit) as e:
        main(["serve", "--remote", text])
    assert e.value.code == 2 and "--remote wants HOST:PORT" in capsys.readouterr().err


def test_remote_parses_ipv4_names_and_ipv6():
    assert serve_config.parse_remote("192.168.1.12:8502") == ("192.168.1.12", 8502)
    assert serve_config.parse_remote("lab-pc-07:8502") == ("lab-pc-07", 8502)
    assert serve_config.parse_remote("[fd00::5]:8502") == ("fd00::5", 8502)


def test_cli_user_errors_exit_2_with_one_line(capsys, monkeypatch):
    assert main(["serve", "--workers", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --workers 0") and "\n" not in err
    monkeypatch.setenv("CTXLAB_HAPROXY", "")  # as if haproxy were not installed
    assert main(["serve", "--port", "8630"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "apt-get install haproxy" in err and "streamlit run app.py" in err


def test_dry_run_prints_config_and_commands_and_starts_nothing(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("CTXLAB_HAPROXY", "")  # works without haproxy too, and says how to get it
    assert main(["serve", "--dry-run", "--workers", "3", "--port", "8630", "--run-dir", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    assert out.count("    server s") == 3 and "bind 127.0.0.1:8630" in out
    assert re.search(r"^# s3: .*streamlit run .*app\.py --server\.port 8633 ", out, re.M)
    assert re.search(r"^# proxy: haproxy -f .*haproxy\.cfg -db$", out, re.M)
    assert "OMP_NUM_THREADS=" in out and "apt-get install haproxy" in out
    assert not (tmp_path / "run").exists()


# --- integration: the real proxy and two real Streamlit processes ---------------------------------------------------


def _free_run(n):
    """The first of n consecutive free ports on 127.0.0.1."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            first = s.getsockname()[1]
        if first + n < 65536 and not any(serve_proc.port_in_use("127.0.0.1", first + i) for i in range(n)):
            return first
    pytest.fail("no free ports")


def _children(pid):
    """Pids whose parent is `pid` (from /proc)."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == pid:
                out.append(int(d.name))
    return out


def _alive(pid):
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _get(url, cookie=None):
    req = urllib.request.Request(url, headers={"Cookie": f"{serve_config.COOKIE}={cookie}"} if cookie else {})
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.status, r.headers, r.read()


def test_serve_two_workers_sticky_websocket_restart_and_clean_stop(haproxy_or_skip, tmp_path):
    from websockets.sync.client import connect  # a Streamlit dependency

    if not Path("/proc/self/stat").exists():
        pytest.skip("needs /proc to list serve's children (Linux)")

    port = _free_run(3)
    base = port + 1
    env = dict(os.environ, CTXLAB_NO_PREWARM="1", PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ctxlib",
            "serve",
            "--workers",
            "2",
            "--port",
            str(port),
            "--backend-port-base",
            str(base),
            "--run-dir",
            str(tmp_path / "run"),
            "--start-timeout",
            "150",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out, err = [], []
    for stream, sink in ((proc.stdout, out), (proc.stderr, err)):
        threading.Thread(target=lambda s=stream, k=sink: k.extend(s), daemon=True).start()
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 170
        while not any("serving at" in ln for ln in out):
            assert proc.poll() is None, f"serve exited {proc.returncode}: {''.join(err)[-3000:]}"
            assert time.time() < deadline, f"no 'serving at' line: {''.join(out + err)[-3000:]}"
            time.sleep(0.3)
        assert out[0].startswith(f"ctxlab is serving at {url} (2 local Streamlit processes")
        kids = _children(proc.pid)
        assert len(kids) == 3, kids  # two backends and haproxy, each its own process group
        assert all(os.getpgid(k) == k for k in kids)

        status, headers, body = _get(url + "/")
        assert status == 200 and b"<html" in body.lower()
        first = headers["X-Ctxlab-Backend"]
        assert first in ("s1", "s2") and f"{serve_config.COOKIE}={first}" in " ".join(headers.get_all("Set-Cookie"))
        assert _get(url + "/_stcore/health")[2] == b"ok"
        new = [_get(url + "/_stcore/health")[1]["X-Ctxlab-Backend"] for _ in range(4)]  # four new browsers
        assert sorted(new) == ["s1", "s1", "s2", "s2"], new  # split evenly
        for name in ("s1", "s2", "s2", "s1"):  # both backends are reached, each browser stays on its own
            status, headers, body = _get(url + "/_stcore/health", cookie=name)
            assert (status, headers["X-Ctxlab-Backend"], body) == (200, name, b"ok")
            assert serve_config.COOKIE not in " ".join(
                headers.get_all("Set-Cookie") or []
            )  # pinned already: no new cookie

        for name in ("s1", "s2"):  # the websocket upgrade through the proxy, to the cookie's backend
            with connect(
                f"ws://127.0.0.1:{port}/_stcore/stream",
                subprotocols=["streamlit"],
                open_timeout=20,
                additional_headers={"Cookie": f"{serve_config.COOKIE}={name}", "Origin": url},
            ) as ws:
                assert ws.response.status_code == 101
                assert ws.subprotocol == "streamlit" and ws.response.headers["X-Ctxlab-Backend"] == name

        # a backend that dies is started again
        s1 = next(
            k for k in kids if f"--server.port {base} " in Path(f"/proc/{k}/cmdline").read_text().replace("\0", " ")
        )
        os.kill(s1, signal.SIGKILL)
        deadline = time.time() + 120
        while not serve_proc.healthy(f"http://127.0.0.1:{base}", timeout=1):
            assert time.time() < deadline, f"s1 was not restarted: {''.join(err)[-2000:]}"
            time.sleep(0.5)
        assert any("backend s1" in ln and "restarting it (1/3)" in ln for ln in err)
        kids = _children(proc.pid)
        assert len(kids) == 3 and s1 not in kids
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(40)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    assert rc == 0, "".join(err)[-2000:]
    assert not [k for k in kids if _alive(k)], "children left behind"
    for p in (port, base, base + 1):
        assert not serve_proc.port_in_use("127.0.0.1", p), f"port {p} still taken"


class _FakeUdp:
    """socket.socket stand-in: 'connecting' picks the interface `ip` (or fails, as with no route at all)."""

    def __init__(self, ip):
        self.ip = ip

    def __call__(self, *a):
        return self

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def connect(self, addr):
        if self.ip is None:
            raise OSError("Network is unreachable")

    def getsockname(self):
        return (self.ip, 40000)


@pytest.mark.parametrize("host", ["0.0.0.0", "::"])
@pytest.mark.parametrize(
    "iface,hostname,shown",
    [
        ("192.168.1.23", "classroom-pc", "192.168.1.23"),  # the interface the network route leaves by
        (None, "classroom-pc", "classroom-pc"),  # no route: the machine's name
        ("127.0.1.1", "classroom-pc", "classroom-pc"),  # a route only through loopback: never 127.x for students
    ],
)
def test_public_url_on_all_interfaces_is_not_loopback(monkeypatch, host, iface, hostname, shown):
    import ipaddress

    monkeypatch.setattr(serve_config.socket, "socket", _FakeUdp(iface))
    monkeypatch.setattr(serve_config.socket, "gethostname", lambda: hostname)
    url = serve_config.public_url(host, 8501)
    assert url == f"http://{shown}:8501"
    h = url.split("//")[1].rsplit(":", 1)[0]
    assert h != "localhost" and not (h[0].isdigit() and ipaddress.ip_address(h).is_loopback)


def test_public_url_for_one_address_is_that_address():
    assert serve_config.public_url("127.0.0.1", 8600) == "http://127.0.0.1:8600"
    assert serve_config.public_url("fd00::5", 8600) == "http://[fd00::5]:8600"

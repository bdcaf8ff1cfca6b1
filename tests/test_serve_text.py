"""What `python -m ctxlib serve` tells the teacher, checked by content (found by bench/mutation.sh's `serve` scope):
each option's help (what it is, its default and unit), each error (the bad value and what to do), the command lines
and paths it prints, the line with the students' URL, and the limits its messages state being the ones applied.

haproxy is a stand-in script here (it records its calls and accepts or rejects the config as told), and the process
Supervisor a stand-in class, so nothing is started and every test takes well under a second."""

import argparse
import contextlib
import ipaddress
import re
import shlex
import signal
import socket
import sys
import tempfile
from pathlib import Path

import pytest

from ctxlib import serve, serve_config, serve_proc

DOCS = (Path(__file__).resolve().parent.parent / "docs" / "serving.md").read_text(encoding="utf-8")


def _parser():
    p = argparse.ArgumentParser(prog="ctxlib serve")
    serve.add_arguments(p)
    return p


def _helps():
    return {a.option_strings[0]: a.help for a in _parser()._actions if a.dest != "help"}


# --- help -------------------------------------------------------------------------------------------------------------

# each option's help opens by saying what it is (case matters: option names, "Streamlit", HOST:PORT)
SAYS = {
    "--workers": [r"^Streamlit processes\b", r"\bon this machine\b", r"\(default 2\)$"],
    "--port": [r"^the port\b", r"\bstudents open\b", r"\(default 8501\)$"],
    "--host": [r"^address the proxy listens on\b", r"\b127\.0\.0\.1 \(this machine, the default\)", r"0\.0\.0\.0"],
    "--backend-port-base": [r"^first backend port\b", r"\bon 127\.0\.0\.1\b", r"\(default --port \+ 1\b"],
    "--remote": [r"^also send students to a Streamlit\b", r"\banother machine\b", r"\(repeatable\)$"],
    "--run-dir": [r"^where the config and logs go\b", r"\(default: a new temp dir\)$"],
    "--start-timeout": [r"^seconds\b", r"\bthe backends' health\b", r"\(default 180\)$"],
    "--dry-run": [r"^print the proxy config and the commands\b", r"\bstart nothing$"],
}


@pytest.mark.parametrize("option", sorted(SAYS))
def test_each_help_says_what_the_option_is_and_its_default(option):
    text = _helps()[option]
    for pattern in SAYS[option]:
        assert re.search(pattern, text), (option, pattern, text)


def test_help_and_errors_spell_host_port_alike(capsys):
    """The usage line, the --remote error and the --workers 0 error all write a remote backend as HOST:PORT."""
    usage = " ".join(_parser().format_help().split())
    assert "[--remote HOST:PORT]" in usage
    with pytest.raises(serve_config.ServeError) as e:
        serve_config.make_plan(0, 8501, "127.0.0.1")
    assert "--workers N" in str(e.value) and "--remote HOST:PORT" in str(e.value)
    with pytest.raises(argparse.ArgumentTypeError, match=r"--remote wants HOST:PORT\b"):
        serve_config.parse_remote("pc")


# --- limits stated in messages are the limits applied ---------------------------------------------------------------


def test_the_port_range_an_error_states_is_the_one_applied():
    with pytest.raises(serve_config.ServeError) as e:
        serve_config.make_plan(1, 0, "127.0.0.1")
    lo, hi = map(int, re.search(r"between (\d+) and (\d+), got 0$", str(e.value)).groups())
    assert (lo, hi) == (1, 65535)
    assert serve_config.make_plan(1, lo, "127.0.0.1").backends[0].port == lo + 1
    assert serve_config.make_plan(1, hi, "127.0.0.1", backend_port_base=lo).backends[0].port == lo
    for bad in (lo - 1, hi + 1):
        with pytest.raises(serve_config.ServeError, match=rf"got {bad}$"):
            serve_config.make_plan(1, bad, "127.0.0.1")
    assert serve_config.parse_remote(f"pc:{lo}") == ("pc", lo) and serve_config.parse_remote(f"pc:{hi}") == ("pc", hi)
    with pytest.raises(argparse.ArgumentTypeError, match=rf"got 'pc:{hi + 1}'"):
        serve_config.parse_remote(f"pc:{hi + 1}")


def test_the_worker_limit_an_error_states_is_the_one_applied():
    with pytest.raises(serve_config.ServeError) as e:
        serve_config.make_plan(1000, 8501, "127.0.0.1")
    limit = int(re.search(r"^--workers 1000 is more than (\d+);", str(e.value)).group(1))
    assert len(serve_config.make_plan(limit, 8501, "127.0.0.1", cores=1).backends) == limit
    with pytest.raises(serve_config.ServeError, match=rf"^--workers {limit + 1} is more than {limit};"):
        serve_config.make_plan(limit + 1, 8501, "127.0.0.1")


def test_clashing_ports_error_names_the_backends_range():
    with pytest.raises(serve_config.ServeError) as e:
        serve_config.make_plan(3, 8501, "127.0.0.1", backend_port_base=8500)
    assert re.search(r"\bports 8500-8502 include --port 8501; choose another --backend-port-base$", str(e.value))


def test_a_remote_given_twice_is_refused_and_host_names_are_kept_whole():
    with pytest.raises(serve_config.ServeError, match=r"^--remote 10\.0\.0\.5:8502 is listed twice"):
        serve_config.make_plan(1, 8501, "127.0.0.1", remotes=[("10.0.0.5", 8502), ("10.0.0.5", 8502)])
    plan = serve_config.make_plan(1, 8501, "127.0.0.1", remotes=[("10.0.0.5", 8502), ("10.0.0.5", 8503)])
    assert [(b.port, b.local) for b in plan.backends[1:]] == [(8502, False), (8503, False)]
    # a remote's host name keeps every letter; only an IPv6 address's brackets go
    hosts = [serve_config.parse_remote(r)[0] for r in ("LAB-PC-X:8502", "Xeon:1", "[fd00::5]:8502")]
    assert hosts == ["LAB-PC-X", "Xeon", "fd00::5"]


# --- the proxy config and the commands -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "host, bind", [("0.0.0.0", "0.0.0.0:8601"), ("::", "[::]:8601"), ("127.0.0.1", "127.0.0.1:8601")]
)
def test_the_plan_binds_the_proxy_where_host_says(host, bind):
    cfg = serve_config.make_plan(2, 8601, host).config
    assert re.findall(r"^\s+bind (\S+)$", cfg, re.M) == [bind]


def test_config_defaults_are_serves_defaults_and_checks_run_as_documented():
    args = _parser().parse_args([])
    bs = [serve_config.Backend("s1", "127.0.0.1", 9000)]
    assert serve_config.haproxy_config(bs) == serve_config.haproxy_config(bs, host=args.host, port=args.port)
    every = int(re.search(r"checks every backend's health every (\d+) s\b", DOCS).group(1))
    assert re.findall(r"\bcheck inter (\d+)ms\b", serve_config.haproxy_config(bs)) == [str(every * 1000)]
    assert "check inter 1500ms" in serve_config.haproxy_config(bs, check_interval_s=1.5)


def test_config_refusals_say_why():
    with pytest.raises(ValueError, match=r"\bneeds at least one backend$"):
        serve_config.haproxy_config([])
    two = [serve_config.Backend("s1", "a", 1), serve_config.Backend("s1", "b", 2)]
    with pytest.raises(ValueError, match=r"\bmust be unique, got \['s1', 's1'\]$"):
        serve_config.haproxy_config(two)


def test_backend_command_is_one_streamlit_run_accepts_headless_and_without_usage_stats():
    from streamlit.web import cli as st_cli

    cmd = serve_config.backend_command(8502)
    assert cmd[:4] == [sys.executable, "-m", "streamlit", "run"]
    params = st_cli.main_run.make_context("run", cmd[4:]).params  # streamlit's own parser: unknown options fail
    assert params["target"] == str(serve_config.APP)
    assert (params["server_port"], params["server_address"]) == (8502, "127.0.0.1")
    assert params["server_headless"] is True  # no browser opened on the teacher's machine
    assert params["browser_gatherUsageStats"] is False  # nothing sent out


def test_backend_env_is_this_environment_with_the_thread_limits(monkeypatch):
    monkeypatch.setenv("CTXLAB_PROBE", "kept")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    env = serve_config.backend_env(4)
    assert env["CTXLAB_PROBE"] == "kept" and env["OMP_NUM_THREADS"] == env["MKL_NUM_THREADS"] == "4"
    assert serve_config.os.environ["OMP_NUM_THREADS"] == "1"  # serve's own environment untouched


@pytest.mark.parametrize("host", ["0.0.0.0", "::", ""])
def test_serve_reaches_a_proxy_on_every_interface_through_this_machine(host):
    assert serve_config.url_host(host) == "127.0.0.1"
    assert serve_config.Backend("s1", host, 8502).url == "http://127.0.0.1:8502"
    assert serve_config.url_host("fd00::5") == "[fd00::5]" and serve_config.url_host("10.0.0.5") == "10.0.0.5"


class _RecordingUdp:
    """socket.socket stand-in that records how it was made and where it 'connected' (a real UDP connect sends
    nothing; a TCP one would send a SYN and could wait minutes)."""

    def __init__(self):
        self.made, self.to = None, None

    def __call__(self, *a, **kw):
        self.made = (a + (-1, -1))[:2]
        return self

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def connect(self, addr):
        self.to = addr

    def getsockname(self):
        return ("192.168.1.23", 40000)


def test_public_url_asks_a_udp_socket_for_the_outgoing_interface(monkeypatch):
    fake = _RecordingUdp()
    monkeypatch.setattr(serve_config.socket, "socket", fake)
    assert serve_config.public_url("0.0.0.0", 8501) == "http://192.168.1.23:8501"
    assert fake.made == (socket.AF_INET, socket.SOCK_DGRAM)
    ip = ipaddress.ip_address(fake.to[0])
    assert ip.version == 4 and ip.is_private and not ip.is_loopback and isinstance(fake.to[1], int)


def test_port_in_use_on_ipv6():
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
            s.listen()
            port = s.getsockname()[1]
            assert serve_proc.port_in_use("::1", port)
    except OSError:
        pytest.skip("no IPv6 loopback here")
    assert not serve_proc.port_in_use("::1", port)


# --- `serve` itself: dry run, refusals before anything starts, the serving line ------------------------------------


def _fake_haproxy(tmp_path, rc=0, out="", err=""):
    """An executable standing in for haproxy: appends its arguments to `calls`; `-c` prints out/err and exits rc."""
    exe, calls = tmp_path / "bin" / "haproxy", tmp_path / "bin" / "calls"
    exe.parent.mkdir()
    exe.write_text(
        "#!/bin/sh\n"
        f'echo "$@" >> {shlex.quote(str(calls))}\n'
        '[ "$1" = "-c" ] || exit 0\n'
        f"printf %s {shlex.quote(out)}\nprintf %s {shlex.quote(err)} >&2\nexit {rc}\n"
    )
    exe.chmod(0o755)
    return str(exe), calls


def _free_port(n=3, host="127.0.0.1"):
    """The first of n consecutive ports free on `host` and on 127.0.0.1."""
    for _ in range(50):
        with socket.socket() as s:
            try:
                s.bind((host, 0))
            except OSError:
                pytest.skip(f"cannot bind {host} here")
            p = s.getsockname()[1]
        if p + n < 65536 and not any(serve_proc.port_in_use(h, p + i) for i in range(n) for h in {host, "127.0.0.1"}):
            return p
    pytest.skip("no free ports")


class _Say:
    def __init__(self):
        self.lines = []

    def __call__(self, text, file=None, flush=False):
        self.lines.append((text, "err" if file is sys.stderr else "out", flush))

    def err(self):
        return [t for t, f, _ in self.lines if f == "err"]


def _run(argv, say=None):
    say = say or _Say()
    return serve.main(_parser().parse_args(argv), say=say), say


def test_dry_run_prints_the_documented_proxy_command_and_the_ports_asked_for(tmp_path, monkeypatch):
    exe, calls = _fake_haproxy(tmp_path)
    monkeypatch.setenv("CTXLAB_HAPROXY", exe)
    rc, say = _run(["--dry-run", "--workers", "2", "--port", "8630", "--backend-port-base", "9100"])
    out = "\n".join(t for t, _, _ in say.lines)
    assert rc == 0 and not calls.exists()
    conf = re.search(r"`haproxy -f ([^`]+) -db`", DOCS).group(1)  # `haproxy -f <run dir>/haproxy.cfg -db`
    assert [shlex.split(c) for c in re.findall(r"^# proxy: (.*)$", out, re.M)] == [[exe, "-f", conf, "-db"]]
    ports = [re.search(r"--server\.port (\d+)", ln).group(1) for ln in re.findall(r"^# s\d: .*$", out, re.M)]
    assert ports == ["9100", "9101"]
    assert "apt-get install haproxy" not in out  # haproxy is there: no install hint


def _listen(host, port):
    s = socket.socket()
    s.bind((host, port))
    s.listen()
    return s


@pytest.mark.parametrize("taken", [["proxy"], ["s2"], ["proxy", "s2"]])
def test_a_busy_port_is_named_before_anything_runs(tmp_path, monkeypatch, taken):
    """The proxy's port is checked on --host, the backends' on 127.0.0.1 (127.0.0.2 tells them apart)."""
    exe, calls = _fake_haproxy(tmp_path, rc=1, err="[ALERT] must not be asked\n")
    monkeypatch.setenv("CTXLAB_HAPROXY", exe)
    port = _free_port(3, "127.0.0.2")
    at = {"proxy": ("127.0.0.2", port), "s2": ("127.0.0.1", port + 2)}
    with contextlib.ExitStack() as held:
        busy = [held.enter_context(_listen(*at[t])).getsockname()[1] for t in taken]
        rc, say = _run(["--host", "127.0.0.2", "--port", str(port), "--run-dir", str(tmp_path / "run")])
    listed = ", ".join(map(str, busy))
    assert rc == 2 and say.err() == [f"error: port(s) {listed} already in use; choose --port / --backend-port-base"]
    assert not calls.exists() and not (tmp_path / "run").exists()


ALERTS = ["[ALERT]    (7) : config : parsing [haproxy.cfg:40] : unknown keyword", "[ALERT]    (7) : fatal errors"]


def test_a_rejected_config_is_one_line_with_haproxys_alerts(tmp_path, monkeypatch):
    exe, calls = _fake_haproxy(
        tmp_path, rc=1, out="[NOTICE]   (7) : haproxy version 2.6\n", err="\n".join(ALERTS) + "\n"
    )
    monkeypatch.setenv("CTXLAB_HAPROXY", exe)
    port = _free_port()
    run = tmp_path / "not" / "yet"  # made with its parents
    rc, say = _run(["--port", str(port), "--run-dir", str(run)])
    conf = run / re.search(r"`haproxy -f <run dir>/(\S+) -db`", DOCS).group(1)
    assert rc == 2 and say.err() == [f"error: haproxy rejects the config {conf}: {ALERTS[0]} | {ALERTS[1]}"]
    assert f"bind 127.0.0.1:{port}\n" in conf.read_text(encoding="utf-8")
    assert calls.read_text().split() == ["-c", "-f", str(conf)]


def test_without_alerts_all_haproxy_said_is_shown_and_the_temp_run_dir_is_named(tmp_path, monkeypatch):
    exe, _ = _fake_haproxy(tmp_path, rc=1, out="odd: no such file\n", err="  \nexit status 1\n")
    monkeypatch.setenv("CTXLAB_HAPROXY", exe)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    rc, say = _run(["--port", str(_free_port())])
    (run,) = (tmp_path / "tmp").iterdir()
    assert run.name.startswith("ctxlab-serve-")  # a temp dir the teacher can tell is serve's
    assert rc == 2 and say.err() == [
        f"error: haproxy rejects the config {run / 'haproxy.cfg'}: exit status 1 | odd: no such file"
    ]


STOPS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class _Sup:
    """Supervisor stand-in: records the plan it is given and the signal handlers in force; `then` is what watch does."""

    then = 0

    def __init__(self, plan, haproxy, say):
        _Sup.made = self
        self.plan, self.haproxy, self.say, self.seen = plan, haproxy, say, {}

    def start(self, timeout):
        self.seen["start"] = (timeout, [signal.getsignal(s) for s in STOPS])
        if isinstance(_Sup.then, serve_config.ServeError):
            raise _Sup.then

    def watch(self):
        if isinstance(_Sup.then, Exception):
            raise _Sup.then
        return _Sup.then

    def stop(self):
        self.seen["stop"] = [signal.getsignal(s) for s in STOPS]


@pytest.mark.parametrize(
    "remote, where", [([], "2 local Streamlit"), (["10.0.0.9:8502"], "2 local + 1 remote Streamlit")]
)
def test_serving_line_gives_the_students_url_and_where_things_are(tmp_path, monkeypatch, remote, where):
    """With a --run-dir (a remote), and in a new temp dir (none)."""
    exe, calls = _fake_haproxy(tmp_path)
    monkeypatch.setenv("CTXLAB_HAPROXY", exe)
    monkeypatch.setattr(serve, "Supervisor", _Sup)
    monkeypatch.setattr(serve, "public_url", lambda host, port: f"http://{host}-seen-as-192.168.1.23:{port}")
    monkeypatch.setattr(_Sup, "then", 0)
    before = [signal.getsignal(s) for s in STOPS]
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    port, run = _free_port(), tmp_path / "run"
    argv = ["--host", "0.0.0.0", "--port", str(port), "--start-timeout", "7"] + (
        ["--run-dir", str(run)] if remote else []
    )
    rc, say = _run(argv + [a for r in remote for a in ("--remote", r)])
    run = run if remote else next(tmp_path.glob("ctxlab-serve-*"))
    sup, threads = _Sup.made, serve_config.threads_per_backend(2)
    assert rc == 0 and sup.haproxy == exe and sup.plan.run_dir == run and sup.say is say  # its warnings: serve's
    assert sup.plan.commands["proxy"] == [exe, "-f", str(run / "haproxy.cfg"), "-db"]  # the config haproxy -c checked
    assert calls.read_text().split() == ["-c", "-f", str(run / "haproxy.cfg")]
    assert sup.seen["start"] == (7.0, [serve_proc.raise_stop] * 3)  # Ctrl-C, kill, a closed terminal: a clean stop
    assert sup.seen["stop"] == [signal.SIG_IGN] * 3  # a second Ctrl-C cannot interrupt the stop
    assert [signal.getsignal(s) for s in STOPS] == before
    assert say.lines[0] == (
        f"ctxlab is serving at http://0.0.0.0-seen-as-192.168.1.23:{port} ({where} processes behind haproxy, "
        f"{threads} torch threads each; logs in {run}; Ctrl-C stops)",
        "out",
        True,  # flushed: shown at once in a log or a pipe
    )
    (stopped,) = say.err()
    assert 0 <= float(re.fullmatch(r"stopped \((\d+\.\d) s\)", stopped).group(1)) < 5


def test_a_stop_signal_stops_cleanly_and_a_failed_start_exits_1(tmp_path, monkeypatch):
    exe, _ = _fake_haproxy(tmp_path)
    monkeypatch.setenv("CTXLAB_HAPROXY", exe)
    monkeypatch.setattr(serve, "Supervisor", _Sup)
    monkeypatch.setattr(_Sup, "then", serve_proc.Stop(signal.SIGINT))
    argv = ["--port", str(_free_port()), "--run-dir", str(tmp_path / "run")]
    rc, say = _run(argv)
    within = int(re.search(r"stops the proxy, then every backend \(within ~(\d+) s\)", DOCS).group(1))
    assert rc == 0 and say.err()[0] == f"stopping: haproxy, then the backends (at most ~{within} s)"
    assert "stop" in _Sup.made.seen
    monkeypatch.setattr(_Sup, "then", serve_config.ServeError("backend s1 (port 8502) exited with code 1:\nTraceback"))
    rc, say = _run(argv)
    assert rc == 1 and say.err()[0] == "error: backend s1 (port 8502) exited with code 1:\nTraceback"
    assert "stop" in _Sup.made.seen and say.err()[1].startswith("stopped (")

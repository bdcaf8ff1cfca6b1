"""`python -m ctxlib serve`'s options and helpers beyond test_serve.py (found by bench/mutation.sh's `serve` scope):
the defaults its help text states, the haproxy binary it finds, the threads it gives each backend."""

import argparse
import os
import re
import stat

from ctxlib import serve, serve_config


def _parser():
    p = argparse.ArgumentParser()
    serve.add_arguments(p)
    return p


def test_each_stated_default_is_the_default_used():
    p = _parser()
    args = p.parse_args([])
    stated = {a.dest: re.search(r"default (\S+?)[);]", a.help or "") for a in p._actions if a.help}
    assert {k: float(m.group(1)) for k, m in stated.items() if m} == {"workers": 2, "port": 8501, "start_timeout": 180}
    assert (args.workers, args.port, args.host, args.backend_port_base) == (2, 8501, "127.0.0.1", None)
    assert (args.remote, args.run_dir, args.start_timeout, args.dry_run) == (None, None, 180.0, False)
    assert "127.0.0.1" in p._option_string_actions["--host"].help


def test_every_option_is_explained_and_typed():
    p = _parser()
    for a in p._actions:
        if a.dest != "help":
            assert a.help and len(a.help) > 15, a.dest
    args = p.parse_args(
        [
            "--workers",
            "3",
            "--port",
            "9000",
            "--backend-port-base",
            "9100",
            "--start-timeout",
            "2.5",
            "--remote",
            "[fd00::5]:8502",
            "--remote",
            "pc:8503",
            "--dry-run",
        ]
    )
    assert (args.workers, args.port, args.backend_port_base, args.start_timeout) == (3, 9000, 9100, 2.5)
    assert args.remote == [("fd00::5", 8502), ("pc", 8503)] and args.dry_run


def test_find_haproxy_takes_an_executable_env_path_only(tmp_path, monkeypatch):
    exe = tmp_path / "haproxy"
    exe.write_text("#!/bin/sh\n")
    monkeypatch.setenv("CTXLAB_HAPROXY", str(exe))
    assert serve_config.find_haproxy() is None  # not executable
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    assert serve_config.find_haproxy() == str(exe)
    monkeypatch.setenv("CTXLAB_HAPROXY", "")
    assert serve_config.find_haproxy() is None


def test_find_haproxy_on_path_or_in_sbin(tmp_path, monkeypatch):
    monkeypatch.delenv("CTXLAB_HAPROXY", raising=False)
    exe = tmp_path / "haproxy"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert serve_config.find_haproxy() == str(exe)
    monkeypatch.setenv("PATH", str(tmp_path / "none"))
    sbin = [d for d in ("/usr/sbin", "/usr/local/sbin") if os.access(os.path.join(d, "haproxy"), os.X_OK)]
    assert serve_config.find_haproxy() == (os.path.join(sbin[0], "haproxy") if sbin else None)


def test_threads_share_the_cores_this_process_may_use(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(6)), raising=False)
    assert serve_config.threads_per_backend(4) == 1 and serve_config.threads_per_backend(1) == 6
    assert serve_config.threads_per_backend(3) == 2 and serve_config.threads_per_backend(0) == 6
    monkeypatch.delattr(os, "sched_getaffinity")
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert serve_config.threads_per_backend(1) == 1
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    assert serve_config.threads_per_backend(2) == 4

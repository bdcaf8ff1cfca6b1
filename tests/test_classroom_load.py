"""bench/classroom_load.py: the protocol parser on crafted messages, the students' inputs, and a live server with 2
students (the shipped word2vec checkpoint alone, so the server starts and runs in seconds)."""

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest
from streamlit.proto.Alert_pb2 import Alert
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from ctxlib import checkpoint, examples

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("classroom_load", ROOT / "bench" / "classroom_load.py")
cl = importlib.util.module_from_spec(_spec)
sys.modules["classroom_load"] = cl
_spec.loader.exec_module(cl)


def _element(setup) -> ForwardMsg:
    m = ForwardMsg()
    setup(m.delta.new_element)
    return m


def test_scan_counts_exceptions_error_alerts_and_bad_endings():
    t = cl.new_tally()

    def exc(el):
        el.exception.type, el.exception.message = "ValueError", "boom"

    def err(el):
        el.alert.body, el.alert.format = "no sentence", Alert.ERROR

    def warn(el):
        el.alert.body, el.alert.format = "cut", Alert.WARNING

    for setup in (exc, err, warn, lambda el: setattr(el.markdown, "body", "hi")):
        assert cl.scan(_element(setup), t) is None
    assert (t["exceptions"], t["error_alerts"], t["elements"]) == (1, 1, 4)
    assert t["first_error"] == "exception ValueError: boom"
    nf = ForwardMsg()
    nf.page_not_found.page_name = "Nope"
    assert cl.scan(nf, t) is None and t["page_errors"] == 1
    early, compile_err, ok = ForwardMsg(), ForwardMsg(), ForwardMsg()
    early.script_finished = ForwardMsg.FINISHED_EARLY_FOR_RERUN
    compile_err.script_finished = ForwardMsg.FINISHED_WITH_COMPILE_ERROR
    ok.script_finished = ForwardMsg.FINISHED_SUCCESSFULLY
    assert cl.scan(early, t) is None  # a rerun replaced the run: keep waiting
    assert cl.scan(compile_err, t) == "done" and t["page_errors"] == 2
    clean = cl.new_tally()
    assert cl.scan(ok, clean) == "done" and clean == cl.new_tally()
    s = cl.summary(
        [{"s": 1.0, "run": 1, "timed_out": False, **t}, {"s": 9.0, "run": 2, "timed_out": True, **clean}],
        ["OSError: refused"],
    )
    assert s["errors"] == 1 + 1 + 2 + 1 + 1 and s["timeouts"] == 1 and s["connect_errors"] == 1
    assert s["p50_s"] == s["max_s"] == 1.0 and s["p50_by_run_s"] == [1.0, None]  # a timed-out run has no time


def test_rerun_message_carries_the_query_and_page():
    b = BackMsg()
    b.ParseFromString(cl.rerun_msg("lang=zh&word=%E8%8B%B9", "Type_vs_token", "abc"))
    assert b.WhichOneof("type") == "rerun_script"
    assert (b.rerun_script.query_string, b.rerun_script.page_name, b.rerun_script.page_script_hash) == (
        "lang=zh&word=%E8%8B%B9",
        "Type_vs_token",
        "abc",
    )


def test_each_student_has_its_own_valid_sentences():
    homes = [cl.student_params("", i, 0) for i in range(40)]
    assert len({(h["a"], h["b"], h["c"]) for h in homes}) == 40
    assert all("苹果" in h[k] for h in homes for k in "abc")
    tts = [cl.student_params("Type_vs_token", i, 0) for i in range(40)]
    assert len({t["s"] for t in tts}) == 40
    for t in tts:  # what the page's own check makes of it: 10 sentences kept, no note at all
        word, kept, notes = examples.check_inputs(t["word"], t["s"])
        assert len(kept) == 10 and notes == [] and {lab for _, lab in kept} == {"水果", "品牌"}
    assert (
        cl.student_params("Type_vs_token", 3, 0)
        == cl.student_params("Type_vs_token", 3, 0)
        != cl.student_params("Type_vs_token", 3, 1)
    )
    assert cl.page_names()["Type vs token"] == cl.page_names()["1_Type_vs_token"] == "Type_vs_token"


@pytest.mark.parametrize("host", ["10.1.2.3", "8.8.8.8", "192.168.0.1"])
def test_refuses_hosts_that_are_not_loopback(host, capsys):
    with pytest.raises(SystemExit, match="not a loopback address"):
        cl.main(["--url", f"http://{host}:8501", "--students", "1", "--runs", "1"])


def test_percentile_is_nearest_rank():
    xs = [float(i) for i in range(1, 21)]
    assert (cl.percentile(xs, 50), cl.percentile(xs, 95), cl.percentile(xs, 100)) == (10.0, 19.0, 20.0)
    assert cl.percentile([], 50) is None


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The app on a free 127.0.0.1 port, reading a checkpoint folder that holds only the shipped word2vec."""
    src = checkpoint.CHECKPOINT_DIR / "word2vec"
    if not (src / "config.json").is_file():
        pytest.skip("checkpoints/word2vec missing: python -m ctxlib train word2vec")
    ck = tmp_path_factory.mktemp("ck")
    shutil.copytree(src, ck / "word2vec")
    port = cl.free_port()
    try:
        proc = cl.start_server(
            "app.py",
            port,
            wait_s=60,
            env={"CTXLIB_CHECKPOINTS": str(ck), "CTXLAB_NO_PREWARM": "1", "OMP_NUM_THREADS": "1"},
        )
    except (RuntimeError, OSError) as e:
        pytest.skip(f"the app server could not start here: {e}")
    yield port, proc.pid
    cl.stop_server(proc)


def _bench(capsys, *argv) -> dict:
    assert cl.main(list(argv)) == 0
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_two_students_on_the_home_page(server, capsys):
    port, pid = server
    r = _bench(
        capsys,
        "--port",
        str(port),
        "--page",
        "Home",
        "--students",
        "2",
        "--runs",
        "1",
        "--timeout",
        "60",
        "--until-idle",
        "60",
    )
    assert r["n_runs"] == 2 and r["errors"] == 0, r
    assert r["idle_wait_s"] is not None and 0 <= r["idle_wait_s"] < 60
    assert 0 < r["p50_s"] <= r["p95_s"] <= r["max_s"] < 60
    assert r["server_pid"] == pid  # found from the port through /proc
    assert r["rss_before_mb"] > 50 and r["rss_after_mb"] > 50 and r["rss_peak_mb"] >= r["rss_after_mb"]
    assert r["elements_per_run"] > 10  # the page was drawn, not just connected to
    assert set(r) >= {
        "p50_s",
        "p95_s",
        "max_s",
        "errors",
        "exceptions",
        "error_alerts",
        "rss_before_mb",
        "rss_after_mb",
    }


class _FakeProcess:
    """A clock, a sleep that advances it, and a CPU-time reader: the process burns `busy(t)` of a core at time t."""

    def __init__(self, busy):
        self.t, self.used, self.busy = 0.0, 0.0, busy

    def clock(self):
        return self.t

    def sleep(self, s):
        self.used += self.busy(self.t) * s
        self.t += s

    def cpu(self, pid):
        return self.used


def test_wait_idle_returns_once_a_process_is_idle_and_gives_up_on_a_busy_one():
    """Load-independent: a fake clock and CPU-time reader stand in for the machine (the real reader is checked
    separately, on this process)."""
    spin = _FakeProcess(lambda t: 1.0)  # spinning the whole time
    assert cl.wait_idle(123, max_s=2.5, window=0.5, cpu=spin.cpu, clock=spin.clock, sleep=spin.sleep) is None
    assert spin.t == pytest.approx(2.5)  # it gave up at max_s, not before
    warm = _FakeProcess(lambda t: 1.0 if t < 3 else 0.01)  # warms up for 3 s, then idles
    assert cl.wait_idle(123, max_s=10, window=0.5, cpu=warm.cpu, clock=warm.clock, sleep=warm.sleep) == 3.5
    idle = _FakeProcess(lambda t: 0.0)
    assert cl.wait_idle(123, max_s=10, window=0.5, cpu=idle.cpu, clock=idle.clock, sleep=idle.sleep) == 0.5
    for load, waited in ((0.06, None), (0.04, 0.5)):  # the line: `share` (5%) of a core
        p = _FakeProcess(lambda t, load=load: load)
        assert cl.wait_idle(1, max_s=2, window=0.5, cpu=p.cpu, clock=p.clock, sleep=p.sleep) == waited, load
    gone = _FakeProcess(lambda t: 0.0)
    assert cl.wait_idle(1, max_s=2, window=0.5, cpu=lambda pid: None, clock=gone.clock, sleep=gone.sleep) is None
    assert cl.wait_idle(None, max_s=1, window=0.01) is None  # no pid: nothing to read


def test_cpu_s_reads_this_process():
    import os

    a = cl.cpu_s(os.getpid())
    sum(i * i for i in range(200_000))  # some CPU work: the count cannot go down
    b = cl.cpu_s(os.getpid())
    assert a is not None and b is not None and 0 <= a <= b
    assert cl.cpu_s(None) is None and cl.cpu_s(2**22 + 12345) is None  # no such process


def test_an_error_on_the_page_is_counted(server, capsys):
    """A word that no student's sentence holds: Type vs token shows its error box to every student."""
    port, _ = server
    r = _bench(
        capsys,
        "--port",
        str(port),
        "--page",
        "Type vs token",
        "--students",
        "2",
        "--runs",
        "1",
        "--query",
        "word=龘靐",
        "--warmup",
        "0",
        "--timeout",
        "60",
    )
    assert r["n_runs"] == 2 and r["error_alerts"] == 2 and r["errors"] == 2 and r["exceptions"] == 0, r
    assert "龘靐" in r["first_error"]


def test_cycles_report_rss_along_the_way(server, capsys):
    port, _ = server
    r = _bench(capsys, "--port", str(port), "--page", "Home", "--cycles", "3", "--warmup", "0", "--timeout", "60")
    assert r["n_runs"] == 3 and r["errors"] == 0 and [k for k, _ in r["rss_curve_mb"]] == [1, 3]
    assert all(mb > 50 for _, mb in r["rss_curve_mb"])


def test_runs_are_bounded_in_count_and_time(server, capsys):
    port, _ = server
    for bad in (
        ["--students", "0"],
        ["--students", "201"],
        ["--runs", "0"],
        ["--timeout", "0"],
        ["--page", "Nope"],
        ["--pause", "601"],
    ):
        assert cl.main(["--port", str(port), *bad]) == 2
    r = _bench(
        capsys,
        "--port",
        str(port),
        "--page",
        "Home",
        "--students",
        "2",
        "--runs",
        "1",
        "--warmup",
        "0",
        "--max-seconds",
        "0.05",
    )
    assert r["n_runs"] == 0 and r["connect_errors"] == 1 and "max-seconds" in r["first_error"], r


def test_students_who_leave_mid_run_are_not_errors(server, capsys):
    port, _ = server
    r = _bench(capsys, "--port", str(port), "--page", "Home", "--cycles", "2", "--leave-after", "0.01", "--warmup", "0")
    assert r["left_mid_run"] == 2 and r["errors"] == 0 and r["p50_s"] is None, r
    assert r["server_cpu_s_in_3s_after"] is not None and r["server_cpu_s_in_3s_after"] >= 0

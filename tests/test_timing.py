"""ctxlib.app.timing: the one writer of the timing log, used by the pages (widgets.record_time) and the warm-up
(warmup._step); and viz.common.freeze, the one way a figure's dict is made once."""

import plotly.graph_objects as go

from ctxlib.app import timing, warmup


def test_write_appends_one_line_per_call_only_when_the_log_is_set(tmp_path, monkeypatch):
    log = tmp_path / "t.log"
    monkeypatch.delenv("CTXLAB_TIMING_LOG", raising=False)
    timing.write("home", 12.34)
    assert not log.exists()
    monkeypatch.setenv("CTXLAB_TIMING_LOG", str(log))
    timing.write("home", 12.34)
    timing.write("atlas", 5)
    lines = [line.split("\t") for line in log.read_text(encoding="utf-8").splitlines()]
    assert [(p, ms) for _, p, ms in lines] == [("home", "12.3"), ("atlas", "5.0")]
    assert all(float(t) > 1e9 for t, _, _ in lines)  # unix time


def test_an_unwritable_log_is_skipped(tmp_path, monkeypatch):
    monkeypatch.setenv("CTXLAB_TIMING_LOG", str(tmp_path / "no" / "such" / "dir.log"))
    timing.write("home", 1.0)  # no exception


def test_pages_and_warmup_write_through_the_one_writer(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(timing, "write", lambda page, ms: calls.append((page, ms)))
    warmup._step("demo", lambda: None)
    from ctxlib.app import widgets

    widgets.record_time("home", 0.0)
    assert [c[0] for c in calls] == ["warmup:demo", "home"]
    assert calls[0][1] == warmup.TIMES["demo"] * 1000


def test_freeze_keeps_frames_and_the_figure_s_own_template():
    from ctxlib.viz.common import SpecFigure, freeze

    fig = go.Figure(
        go.Bar(x=[1], y=[2]),
        layout={"template": "plotly_white", "title": {"text": "t"}},
        frames=[go.Frame(data=[go.Bar(x=[1], y=[3])], name="f1")],
    )
    want = fig.to_dict()
    frozen = freeze(fig)
    assert isinstance(frozen, SpecFigure)
    assert frozen.to_dict() is frozen.to_dict() and frozen.to_dict() == want
    assert go.Figure(frozen.to_dict()).to_dict() == want
    assert freeze(frozen) is frozen
    frozen.update_layout(height=200)  # a later change builds the figure; its dict follows
    assert frozen.to_dict()["layout"]["height"] == 200 and frozen.layout.title.text == "t"


def test_warm_up_runs_without_the_collector_and_freezes_at_the_end(monkeypatch):
    """The warm-up made millions of objects with the collector on: its full passes held the GIL 0.3-1 s each while a
    class arrived (corpus load 6.4 s -> 0.5 s without them). The collector is back on afterwards, also after a failure."""
    import gc

    seen, froze = [], []
    monkeypatch.setattr(warmup, "_one_torch_thread", lambda: None)
    monkeypatch.setattr(warmup, "gc_freeze", lambda: froze.append(gc.isenabled()))
    monkeypatch.setattr(warmup, "_warm_steps", lambda models: seen.append(gc.isenabled()))
    assert gc.isenabled()
    warmup.warm(models=[])
    assert seen == [False] and froze == [True] and gc.isenabled()

    def boom(models):
        raise RuntimeError("a step that escaped")

    monkeypatch.setattr(warmup, "_warm_steps", boom)
    try:
        warmup.warm(models=[])
    except RuntimeError:
        pass
    assert gc.isenabled() and froze == [True, True]


def test_the_warm_up_thread_keeps_the_servers_priority(monkeypatch):
    """A niced warm-up thread holding the GIL on a busy machine stalls every page script (priority inversion): it runs
    at the priority of the thread that started it, with one torch thread."""
    import os
    import threading

    import torch

    got = {}

    def steps(models):
        got["nice"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        got["torch"] = torch.get_num_threads()

    monkeypatch.setattr(warmup, "gc_freeze", lambda: None)
    monkeypatch.setattr(warmup, "_warm_steps", steps)
    before = torch.get_num_threads()
    try:
        t = threading.Thread(target=warmup.warm, kwargs={"models": []})
        t.start()
        t.join(60)
    finally:
        torch.set_num_threads(before)
    assert got == {"nice": os.getpriority(os.PRIO_PROCESS, 0), "torch": 1}

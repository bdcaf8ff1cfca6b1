"""AppTest for the BERT fine-tuning page: the [CLS] head drawing, a live run with a tiny BERT (progress, the result
beside the frozen baselines), Cancel (the steps done stay), a second and third session waiting in the server's job
line with their places, the full-size figures read from the eval files, and the TagLM / CoVe sections."""

import json
import re
import threading
import time

import pytest
from app_fakes import FakeEncoder
from app_pages import PAGES, chart_specs, run_page

from ctxlib import checkpoint, jobs, records
from ctxlib.app import loaders
from ctxlib.evaluation import finetune_live as fl

PAGE = "8_BERT_finetuning.py"
TITLE = "Fine-tuning BERT, and the feature-based predecessors"


@pytest.fixture
def models(monkeypatch, tiny_bert):
    """The tiny BERT and instant stand-ins for ELMo and word2vec; a live run of 24 / 16 reviews."""
    encs = {"bert": tiny_bert, "elmo": FakeEncoder("elmo", 3), "word2vec": FakeEncoder("word2vec", 1)}
    monkeypatch.setattr(loaders, "load_encoder", lambda name: encs[name])
    monkeypatch.setattr(fl, "N_TRAIN", 24)
    monkeypatch.setattr(fl, "N_TEST", 16)
    yield encs
    running, waiting = jobs.line()
    for job in waiting + running:
        job.cancel()
        assert job.wait(60)


def _run(at=None, **qp):
    return run_page(PAGE, TITLE, at, timeout=180, **qp)


def _wait_for(cond, timeout=120):
    t0 = time.time()
    while not cond():
        assert time.time() - t0 < timeout, "timed out"
        time.sleep(0.05)


def _texts(at, kind):
    return " ".join(e.value for e in getattr(at, kind))


def test_page_before_a_run(models):
    at = _run()
    assert [s.value.split(".")[0] for s in at.subheader] == ["1", "2", "3", "4", "5"]
    specs = chart_specs(at)
    drawing = json.dumps(specs[0])
    assert (
        "[CLS]" in drawing and "pooler" in drawing and "layer 2" in drawing and "layer 3" not in drawing
    )  # tiny: 2 layers
    assert "p = " not in drawing  # no fine-tuned head yet, no probabilities
    assert at.button(key="ft_start").disabled is False
    # the full-size figures are the eval files' numbers
    table = at.dataframe[0].value
    bert_ev = records.read_evals(checkpoint.resolve("bert"), ["sentiment"])[0].get("sentiment")
    elmo_ev = records.read_evals(checkpoint.resolve("elmo"), ["sentiment"])[0].get("sentiment")
    want = [round(v, 3) for _, v, _ in fl.full_size_rows(bert_ev, elmo_ev)]
    assert list(table.iloc[:, 1]) == want
    if elmo_ev is not None:
        assert round(elmo_ev.input_score, 3) in want
    # TagLM and CoVe: diagrams, and CoVe says there is no model
    assert any("TagLM" in json.dumps(s) for s in specs) and any("CoVe" in json.dumps(s) for s in specs)
    assert "no CoVe model" in _texts(at, "markdown")
    assert "ELMo_layers?lang=en" in _texts(at, "markdown")
    assert not at.error


def test_live_run_shows_progress_then_the_comparison(models):
    at = _run()
    at.button(key="ft_start").click()
    at.run()
    assert not at.exception, at.exception
    job = jobs.current("finetune")
    assert job is not None and job.owner == at.session_state["ft_owner"]
    assert at.button(key="ft_start").disabled or job.state == jobs.DONE  # no second start from the same session
    assert job.wait(120) and job.state == jobs.DONE, job.error
    at.run()  # the poll sees the end and keeps the result
    assert not at.exception, at.exception
    res = job.result
    assert at.session_state["ft_result"] is res and "ft_job" not in at.session_state
    assert f"test accuracy {res['accuracy']:.3f} on 16 held-out reviews" in _texts(at, "success")
    specs = chart_specs(at)
    bars = [
        s for s in specs if s["data"] and s["data"][0].get("type") == "bar" and s["data"][0].get("orientation") == "h"
    ]
    assert bars, "the comparison chart"
    xs = bars[0]["data"][0]["x"][::-1]  # first row on top
    b = res["baselines"]
    assert xs == [res["accuracy"], b["bert_cls"], b["elmo"], b["word2vec"]]
    history = [s for s in specs if any(tr.get("name") == "loss per step" for tr in s["data"])]
    assert history and len(history[0]["data"][0]["x"]) == len(res["history"]) == 3  # 24 reviews, batch 8
    # the drawing now shows the fine-tuned head's probability for a held-out review
    assert at.selectbox(key="ft_example_True").options[0] == res["examples"][0][0]
    assert f"p = {res['examples'][0][2]:.2f}" in json.dumps(specs[0])


def _slow_work(job):
    for k in range(1, 10_000):
        time.sleep(0.01)
        job.report(k / 10_000, {"step": k, "total": 10_000, "loss": 0.7, "acc": 0.5}, phase="finetune")


def test_cancel_stops_the_run(models, monkeypatch):
    monkeypatch.setattr(fl, "run", lambda job, *a, **kw: _slow_work(job))
    at = _run()
    at.button(key="ft_start").click()
    at.run()
    job = jobs.current("finetune")
    _wait_for(lambda: len(job.points) > 2)
    at.run()
    assert at.get("progress"), "a progress bar while the job runs"
    at.button(key="ft_cancel").click()
    at.run()
    assert job.wait(10) and job.state == jobs.CANCELLED
    at.run()
    assert "Fine-tuning cancelled after" in _texts(at, "info")
    assert "ft_result" not in at.session_state and not at.get("progress")
    kept = [s for s in chart_specs(at) if any(tr.get("name") == "loss per step" for tr in s["data"])]
    assert kept and len(kept[0]["data"][0]["x"]) == len(job.points) >= 3  # the steps done before the cancel stay
    assert at.button(key="ft_start").disabled is False  # free to start again


def test_two_more_sessions_wait_in_line_and_see_their_place(models):
    gate = threading.Event()

    def other_users_run(job):
        job.report(0.3, phase="finetune")
        while not gate.wait(0.02):
            job.report(0.3)

    theirs = jobs.start("finetune", other_users_run, owner="someone else")
    try:
        _wait_for(lambda: theirs.progress >= 0.3)
        at = _run()
        assert "Heavy jobs on this server now: 1 running, 0 waiting" in _texts(at, "info")
        at.button(key="ft_start").click()
        at.run()
        assert not at.exception, at.exception
        mine = jobs.get("finetune", at.session_state["ft_job"])
        assert mine.state == jobs.QUEUED and mine.owner == at.session_state["ft_owner"] and mine.place() == 1
        wait = re.search(r"Waiting in line: place 1 of 1, your job starts in about (\d+) s", _texts(at, "info"))
        # the estimate when the page was drawn: the running job's remaining time, which only grows while its
        # progress stays at 30 %
        assert wait and int(wait.group(1)) <= mine.wait_s() + 1
        assert at.button(key="ft_start").disabled and not at.get("progress")
        other = _run()  # a third student
        other.button(key="ft_start").click()
        other.run()
        assert "Waiting in line: place 2 of 2" in _texts(other, "info")
        at.run()
        assert "Waiting in line: place 1 of 2" in _texts(at, "info")
        other.button(key="ft_leave").click()  # the third one gives up: out of the line, nothing ran
        other.run()
        other.run()
        assert "You left the line; nothing was run." in _texts(other, "info")
        assert "ft_job" not in other.session_state and other.button(key="ft_start").disabled is False
        assert jobs.line()[1] == [mine]
    finally:
        gate.set()
    assert theirs.wait(10) and mine.wait(120) and mine.state == jobs.DONE, mine.error
    at.run()
    assert not at.exception, at.exception
    assert at.session_state["ft_result"] is mine.result and "test accuracy" in _texts(at, "success")
    other.run()
    assert "ft_result" not in other.session_state and not _texts(other, "success")  # the result is its owner's


def test_a_page_that_stopped_polling_loses_its_job(models, monkeypatch):
    monkeypatch.setattr(fl, "run", lambda job, *a, **kw: _slow_work(job))
    at = _run()
    at.button(key="ft_start").click()
    at.run()
    job = jobs.get("finetune", at.session_state["ft_job"])
    assert jobs.reap(now=time.time() + jobs.STALE_S / 2) == []  # polled recently: kept
    assert jobs.reap(now=time.time() + jobs.STALE_S + 1) == [job]  # as if the page had been closed
    assert job.wait(10) and job.state == jobs.CANCELLED and job.cancel_reason == "owner left"
    at.run()
    assert "Your job was stopped because this page stopped checking on it" in _texts(at, "warning")
    assert at.button(key="ft_start").disabled is False


def test_page_in_chinese_after_a_run(models):
    from streamlit.testing.v1 import AppTest
    from test_app_chinese import _english

    at = AppTest.from_file(str(PAGES / PAGE), default_timeout=180)
    at.query_params["lang"] = "zh"
    at.run()
    assert not at.exception, at.exception
    assert at.title[0].value == "BERT 微调，以及基于特征的前身"
    at.button(key="ft_start").click()
    at.run()
    assert jobs.current("finetune").wait(120)
    at.run()
    assert not at.exception, at.exception
    assert "测试准确率" in _texts(at, "success")
    specs = json.dumps(chart_specs(at), ensure_ascii=False)
    assert "负面" in specs and "每步的损失" in specs and "BERT 微调（[CLS] 分类头，全部权重）" in specs
    assert not _english(at), _english(at)

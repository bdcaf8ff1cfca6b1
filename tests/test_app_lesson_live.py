"""AppTest for the lesson's fine-tuning step with its live job: Start beside the question runs the fine-tuning page's
own job (a tiny BERT on 24 / 16 reviews, so it ends in seconds), the result stays hidden until Reveal, and the
answer then comes from the job's own result; before a run has finished, the answer is the shipped figures' and says
so. A run started on the fine-tuning page is the same run in the lesson (one session, one job)."""

import json
import re
import threading
from pathlib import Path

import pytest
from app_fakes import FakeEncoder
from app_pages import PAGES, chart_specs
from streamlit.testing.v1 import AppTest

from ctxlib import jobs, lesson, lesson_facts
from ctxlib.app import i18n, loaders
from ctxlib.app.i18n import escape_md
from ctxlib.evaluation import finetune_live as fl

PAGE = str(PAGES / "0_Lesson.py")
APP = str(Path(__file__).resolve().parent.parent / "app.py")
LESSON = lesson.load("default")
STEP_NO = next(i for i, s in enumerate(LESSON.steps, 1) if s.kind == "finetune")
STEP = LESSON.steps[STEP_NO - 1]


@pytest.fixture
def models(monkeypatch, tiny_bert):
    """The tiny BERT and instant stand-ins for ELMo and word2vec; a live run of 24 / 16 reviews (3 steps)."""
    monkeypatch.setenv("CTXLAB_NO_PREWARM", "1")
    encs = {"bert": tiny_bert, "elmo": FakeEncoder("elmo", 3), "word2vec": FakeEncoder("word2vec", 1)}
    monkeypatch.setattr(loaders, "load_encoder", lambda name: encs[name])
    monkeypatch.setattr(fl, "N_TRAIN", 24)
    monkeypatch.setattr(fl, "N_TEST", 16)
    yield encs
    running, waiting = jobs.line()
    for job in waiting + running:
        job.cancel()
        assert job.wait(60)


def _lesson(lang="en", at=None) -> AppTest:
    at = at or AppTest.from_file(PAGE, default_timeout=180)
    at.query_params.update({"lang": lang, "step": str(STEP_NO)})
    at.run()
    assert not at.exception, at.exception
    assert at.header[0].value == STEP.text("title", lang)
    return at


def _click(at, label_id, lang="en"):
    label = i18n.lookup(label_id, lang)
    next(b for b in at.button if b.label == label).click().run()
    assert not at.exception, at.exception


def _texts(at) -> str:
    return "\n".join(x.value for part in (at.markdown, at.caption, at.info, at.success, at.code) for x in part)


def _plain(md: str) -> str:
    """Markdown as the student reads it (escapes undone)."""
    return re.sub(r"\\(.)", r"\1", md)


def _answer(at) -> str:
    (box,) = at.success
    return box.value


def test_start_in_the_step_then_the_answer_from_the_run(models):
    at = _lesson()
    assert at.button(key="ft_start").disabled is False and not at.get("plotly_chart")
    # before any run: Reveal gives the shipped figures' answer, labelled as such
    _click(at, "lesson.reveal")
    shipped = i18n.lookup("lesson_live.label_shipped", "en")
    assert _answer(at).startswith(i18n.lookup("lesson.answer", "en") + " " + shipped + " ")
    assert i18n.lookup("lesson_live.no_result", "en") in [x.value for x in at.info]
    _click(at, "lesson.hide")
    # Start beside the question: the fine-tuning page's job (kind, owner, session keys)
    at.button(key="ft_start").click().run()
    assert not at.exception, at.exception
    job = jobs.get("finetune", at.session_state["ft_job"])
    assert job is not None and job.owner == at.session_state["ft_owner"]
    assert job.wait(120) and job.state == jobs.DONE, job.error
    at.run()  # the poll sees the end and keeps the result in the session
    assert not at.exception, at.exception
    res = job.result
    assert at.session_state["ft_result"] is res and res["n_test"] == 16 and len(res["history"]) == 3
    before = _texts(at)
    assert i18n.lookup("lesson_live.finished", "en", seconds=res["seconds"]) in before
    assert f"{res['accuracy']:.3f}" not in before and not at.success  # nothing given away before Reveal
    # Reveal: the run's own curve and comparison, then the shipped figures; the answer from the run's result
    _click(at, "lesson.reveal")
    answer = _answer(at)
    live = i18n.lookup("lesson_live.label_live", "en")
    assert answer == i18n.lookup("lesson.answer", "en") + " " + live + " " + lesson.live_answer(
        STEP, res, "en", escape=escape_md
    )
    plain = _plain(answer)
    b = res["baselines"]
    for v in (res["accuracy"], b["bert_cls"], b["elmo"], b["word2vec"], res["majority"]):
        assert f"{v:.3f}" in plain, (v, plain)
    best = max(b.values())
    assert f"{(res['accuracy'] - best) * 100:+.1f} points" in plain
    assert lesson_facts.LIVE_WORDS["ahead" if res["accuracy"] > best else "behind"] in plain
    assert "on 16 held-out reviews" in plain and "for 3 steps" in plain and lesson_facts.MISSING not in plain.split()
    specs = chart_specs(at)
    bars = [s for s in specs if s["data"] and s["data"][0].get("orientation") == "h" and s["layout"].get("shapes")]
    assert bars and bars[0]["data"][0]["x"][::-1] == [res["accuracy"], b["bert_cls"], b["elmo"], b["word2vec"]]
    curve = [s for s in specs if any(tr.get("name") == "loss per step" for tr in s["data"])]
    assert curve and len(curve[0]["data"][0]["x"]) == 3
    assert i18n.lookup("lesson_live.shipped_head", "en") in _texts(at)


def test_a_run_started_on_the_finetuning_page_is_the_lessons(models, monkeypatch):
    gate, real = threading.Event(), fl.run

    def gated(job, *a, **kw):  # the real run, held at its start until the test lets it go
        job.report(0.01, phase="data")
        while not gate.wait(0.02):
            job.report(0.01)
        return real(job, *a, **kw)

    monkeypatch.setattr(fl, "run", gated)
    at = AppTest.from_file(APP, default_timeout=180)
    at.query_params.update({"lang": "en"})
    at.run()
    at.switch_page("pages/8_BERT_finetuning.py").run()
    at.button(key="ft_start").click().run()
    assert not at.exception, at.exception
    job = jobs.get("finetune", at.session_state["ft_job"])
    try:
        at.query_params["step"] = str(STEP_NO)
        at.switch_page("pages/0_Lesson.py").run()
        assert not at.exception, at.exception
        assert at.header[0].value == STEP.text("title", "en")
        assert at.get("progress") and at.button(key="ft_start").disabled  # the running job, not a new one
        assert jobs.owned_by(at.session_state["ft_owner"], "finetune") == [job]
    finally:
        gate.set()
    assert job.wait(120) and job.state == jobs.DONE, job.error
    at.run()
    _click(at, "lesson.reveal")
    assert f"{job.result['accuracy']:.3f}" in _plain(_answer(at))
    assert _answer(at).startswith(
        i18n.lookup("lesson.answer", "en") + " " + i18n.lookup("lesson_live.label_live", "en")
    )


def test_the_step_in_chinese_after_a_run(models):
    from test_app_chinese import _english

    at = _lesson("zh")
    at.button(key="ft_start").click().run()
    job = jobs.current("finetune")
    assert job.wait(120) and job.state == jobs.DONE, job.error
    at.run()
    _click(at, "lesson.reveal", "zh")
    answer = _answer(at)
    assert i18n.lookup("lesson_live.label_live", "zh") in answer and f"{job.result['accuracy']:.3f}" in _plain(answer)
    assert answer.endswith(lesson.live_answer(STEP, job.result, "zh", _zh_words(), escape=escape_md))
    assert "准确率" in answer and not re.search(r"{[a-z_]+}", answer), answer  # every placeholder filled
    assert "每步的损失" in json.dumps(chart_specs(at), ensure_ascii=False)
    assert not _english(at), _english(at)


def _zh_words():
    return {k: i18n.lookup(f"lesson_live.fact.{k}", "zh") for k in lesson_facts.LIVE_WORDS}


def test_a_lesson_without_a_live_answer_uses_the_apps_text(models, monkeypatch, tmp_path):
    """A teacher's fine-tuning step written before live answers existed: the app's default text, from the result."""
    raw = json.loads((lesson.LESSON_DIR / "default.json").read_text(encoding="utf-8"))
    step = next(s for s in raw["steps"] if s["kind"] == "finetune")
    del step["live_answer"]
    raw["steps"] = [step]
    (tmp_path / "default.json").write_text(json.dumps(raw, ensure_ascii=False), encoding="utf-8")
    monkeypatch.setattr(lesson, "LESSON_DIR", tmp_path)
    at = AppTest.from_file(PAGE, default_timeout=180)
    at.query_params.update({"lang": "en"})
    at.run()
    at.button(key="ft_start").click().run()
    job = jobs.current("finetune")
    assert job.wait(120) and job.state == jobs.DONE, job.error
    at.run()
    _click(at, "lesson.reveal")
    default = i18n.lookup("lesson_live.answer_default", "en")
    facts = lesson_facts.live_facts("finetune", job.result)
    want = lesson_facts.fill(default, {k: escape_md(v) for k, v in facts.items()})
    assert _answer(at).endswith(" " + want) and f"{job.result['accuracy']:.3f}" in _plain(want)

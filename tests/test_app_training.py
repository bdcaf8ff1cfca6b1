"""AppTest for the training page: replay of a small timeline (written in the recorder's schema), a GPT timeline
without answers or attention, and a checkpoint folder without any timeline."""

import pytest
from app_pages import PAGES, chart_specs, run_page, teachers_text, use_checkpoint_dir
from streamlit.testing.v1 import AppTest
from test_replay import STEPS, write_timeline

from ctxlib import replay

PAGE = "9_Training.py"
TITLE = "Training: watch a model learn"


@pytest.fixture
def timelines(tmp_path, monkeypatch):
    write_timeline(tmp_path / "bert")
    write_timeline(tmp_path / "gpt", kind="gpt", fill_mask=False, attention=False)  # as the shipped GPT's
    use_checkpoint_dir(monkeypatch, tmp_path)
    return tmp_path


def _run(at=None, **qp):
    return run_page(PAGE, TITLE, at=at, timeout=60, **qp)


def _step_marks(at) -> list[float]:
    """The current-step line (the last shape) of every chart drawn over steps."""
    return [
        s["layout"]["shapes"][-1]["x0"] for s in chart_specs(at) if s["layout"].get("xaxis", {}).get("type") == "log"
    ]


def test_replay_of_a_small_timeline(timelines):
    at = _run(model="bert", step="10", word="打")
    assert at.radio(key="tr_model").options == ["bert", "gpt"] and at.radio(key="tr_model").value == "bert"
    captions = " ".join(c.value for c in at.caption)
    assert "word2vec: its training records no timeline" in captions
    assert "elmo: no training timeline was recorded" in captions and "python -m ctxlib train elmo" in teachers_text(at)
    assert at.select_slider[0].value == 2 and at.metric[0].value == "10" and at.metric[1].value == "1,000"
    specs = chart_specs(at)
    assert len(specs) == 6  # loss, map, accuracy, answers over steps, attention map, head shares
    assert _step_marks(at) == [10, 10, 10, 10]
    # the map shows the projection of this step: the same points as replay.projection's
    pr = replay.projection(replay.load(timelines / "bert"), "打", 2)
    pts = sorted((round(x, 4), round(y, 4)) for t in specs[1]["data"][1:] for x, y in zip(t["x"], t["y"]))
    assert pts == sorted((round(float(x), 4), round(float(y), 4)) for x, y in pr.coords[2])
    assert specs[1]["layout"]["xaxis"]["range"] == pytest.approx(list(pr.bounds[:2]))
    assert {t["name"] for t in specs[1]["data"][1:]} == {"打人", "打球", "打电话"}
    df = at.dataframe[0].value
    assert list(df.iloc[0])[:2] == [replay.tl.FILL_MASK_SENTENCES[0], "奶"]
    assert len(at.info) == 4 and all(i.value.startswith(("Notice", "At this step")) for i in at.info)
    assert at.query_params["step"] in ("10", ["10"])

    at.select_slider[0].set_value(0).run()  # back to the untrained model: the same axes, other points
    assert not at.exception and at.metric[0].value == "0" and at.metric[2].value == "—"
    assert _step_marks(at) == [0.5] * 4 and chart_specs(at)[1]["layout"]["xaxis"]["range"] == pytest.approx(
        list(pr.bounds[:2])
    )
    at.selectbox(key="tr_att_head").set_value(1).run()
    assert "head 2" in chart_specs(at)[4]["layout"]["title"]["text"]


def test_play_restarts_at_the_end_and_pauses(timelines):
    at = _run(model="bert")
    assert at.select_slider[0].value == len(STEPS) - 1
    at.button(key="tr_play").click().run()
    assert not at.exception and at.select_slider[0].value == 0 and at.button(key="tr_play").label == "❚❚ Pause"
    at.button(key="tr_play").click().run()
    assert at.button(key="tr_play").label == "▶ Play"


def test_gpt_timeline_without_answers_or_attention(timelines):
    at = _run(model="gpt", step="nonsense")
    assert at.select_slider[0].value == len(STEPS) - 1  # a bad ?step=: the last recorded step
    infos = [i.value for i in at.info]
    assert any(
        "recorded no next-character answers" in v for v in infos
    ) and "python -m ctxlib train gpt" in teachers_text(at)
    assert any("recorded no attention" in v for v in infos)
    assert len(chart_specs(at)) == 3 and not at.error


def test_no_timeline_anywhere(tmp_path, monkeypatch):
    use_checkpoint_dir(monkeypatch, tmp_path)
    at = _run()
    assert "No model in the checkpoint folder has a training timeline" in at.warning[0].value
    assert not chart_specs(at)


def test_unreadable_timeline_is_a_message(timelines):
    (timelines / "bert" / "timeline.npz").write_bytes(b"not a zip")
    at = _run(model="bert")
    assert "cannot be read" in at.error[0].value and not chart_specs(at)


def test_chinese(timelines):
    at = AppTest.from_file(str(PAGES / PAGE), default_timeout=60)
    at.query_params["lang"] = "zh"
    at.run()
    assert not at.exception and [t.value for t in at.title] == ["训练：看模型怎样学会"] and at.metric[0].label == "步数"


def test_gpt_timeline_with_next_characters(tmp_path, monkeypatch):
    write_timeline(tmp_path / "gpt", kind="gpt", fill_mask=False, lm=True)  # as recorded from now on
    use_checkpoint_dir(monkeypatch, tmp_path)
    at = _run(model="gpt", step="1")
    row = at.dataframe[0].value.iloc[0]
    assert list(row.index) == ["text so far", "written for", "next character: top 5 at this step"]
    assert list(row) == ["早餐我喝了一杯热牛…", "奶", "奶 20% · 水 10%"]
    hits = next(s for s in chart_specs(at) if "intended" in s["layout"]["title"]["text"])
    assert [t["name"] for t in hits["data"]] == ["GPT: next character"] and hits["data"][0]["y"] == [1, 1, 1, 1]
    assert len(chart_specs(at)) == 6  # its attention is there too: map and head shares


# -- Train live ------------------------------------------------------------------------------------------------------
import threading  # noqa: E402
import time  # noqa: E402

import streamlit  # noqa: E402

from ctxlib import corpus, jobs, live, live_results, user_text  # noqa: E402
from ctxlib.app import live_views, loaders  # noqa: E402
from ctxlib.app.i18n import escape_md  # noqa: E402


@pytest.fixture
def live_short(monkeypatch):
    """Live runs of a second or two on 300 paragraphs of the train split; no job left running afterwards."""
    monkeypatch.setattr(live, "BUDGET_MIN_S", 1)
    pars = corpus.load("all", "train")[:300]
    monkeypatch.setattr(live, "subset", lambda words, seed=0: pars)
    yield
    job = jobs.current(live_views.SLOT)
    if job is not None:
        job.cancel()
        assert job.wait(60), "a test left a live training running"


def _live(at=None, **qp):
    at = _run(at, mode="live", **qp)
    assert at.radio(key="tr_mode").value == "live"
    return at


def _until_done(at, timeout=120):
    """Rerun the page (the poll fragment's job) until this session's job has ended and the page has seen it."""
    t0 = time.time()
    while "lv_job" in at.session_state:
        assert time.time() - t0 < timeout, "the live run did not end"
        time.sleep(0.2)
        at.run()
        assert not at.exception, at.exception
    return at


def _texts(at, kind):
    return " ".join(e.value for e in getattr(at, kind))


def test_live_word2vec_run_start_to_end_then_use_and_download(live_short):
    at = _live()
    assert at.radio(key="lv_kind").options == ["word2vec", "ELMo (tiny)", "BERT (tiny)", "GPT (tiny)"]
    assert at.slider(key="lv_budget").value == 90 and at.button(key="lv_start").disabled is False
    at.radio(key="lv_kind").set_value("word2vec")
    at.slider(key="lv_budget").set_value(1).run()
    at.button(key="lv_start").click().run()
    assert not at.exception, at.exception
    job = jobs.current(live_views.SLOT)
    assert job is not None and job.owner == at.session_state["lv_owner"]
    _until_done(at)
    assert job.state == jobs.DONE, job.error
    run = job.result
    assert run.state == "done" and run.loadable() and run.spec.budget_s == 1
    assert f"word2vec trained: {run.summary['steps']:,} steps" in _texts(at, "success")
    near = at.dataframe[0].value
    assert list(near.columns) == ["word", "nearest words (cosine)"] and "中国" in list(near["word"])
    assert "records no timeline" in _texts(at, "caption") and not chart_specs(at)  # word2vec: nothing to replay
    # the loss curve was drawn from the job's points while it ran: they have losses
    assert job.points and any(p["loss"] is not None for p in job.points)
    assert at.get("download_button")
    at.button(key="lv_use").click().run()
    name = f"live: {run.label}"
    assert at.session_state[loaders.LIVE_KEY] == {name: str(run.out)}
    assert f"offer “{escape_md(name)}”" in _texts(at, "caption") and at.button(key="lv_use").disabled
    # the other pages' pickers offer it, in this session only
    tt = AppTest.from_file(str(PAGES / "1_Type_vs_token.py"), default_timeout=120)
    tt.query_params["lang"] = "en"
    tt.session_state[loaders.LIVE_KEY] = {name: str(run.out)}
    tt.run()
    assert not tt.exception, tt.exception
    assert name in tt.multiselect(key="tt_models").options
    other = AppTest.from_file(str(PAGES / "1_Type_vs_token.py"), default_timeout=120)
    other.query_params["lang"] = "en"
    other.run()
    assert name not in other.multiselect(key="tt_models").options


def _slow_work(session, spec):
    def work(job):
        run = session.new_run(spec)
        for k in range(1, 100_000):
            time.sleep(0.01)
            job.report(
                k / 100_000,
                {"s": k / 100, "step": k, "loss": 5.0 - k / 1000, "tokens": 10 * k, "tokens_s": 1000.0},
                phase="train",
            )
        return run

    return work


def _running_job_with_points(n: int, timeout: float = 30):
    """The live job this page started, once it has reported n points (fails after `timeout` seconds)."""
    job = jobs.current(live_views.SLOT)
    t0 = time.time()
    while len(job.points) < n:
        assert time.time() - t0 < timeout
        time.sleep(0.05)
    return job


def test_cancel_leaves_the_page_usable(live_short, monkeypatch):
    monkeypatch.setattr(live, "make_work", _slow_work)
    at = _live()
    at.button(key="lv_start").click().run()
    job = _running_job_with_points(5)
    at.run()
    assert at.get("progress") and at.metric[1].label == "Step"
    live_plot = [s for s in chart_specs(at) if s["layout"]["title"]["text"] == "Training loss as it trains"]
    assert live_plot and len(live_plot[0]["data"][0]["x"]) >= 5
    at.button(key="lv_cancel").click().run()
    assert job.wait(10) and job.state == jobs.CANCELLED
    _until_done(at)
    assert "Training cancelled." in _texts(at, "info") and not at.get("progress")
    assert at.button(key="lv_start").disabled is False and not at.success


def test_a_failed_run_says_why(live_short, monkeypatch):
    def failing(session, spec):
        def work(job):
            session.new_run(spec)
            raise ValueError("only 1 words reach min_count=3; give more text or lower min_count")

        return work

    monkeypatch.setattr(live, "make_work", failing)
    at = _live()
    at.button(key="lv_start").click().run()
    _until_done(at)
    assert "Training failed: ValueError: only 1 words reach min\\_count" in _texts(at, "error")
    assert at.button(key="lv_start").disabled is False


def test_two_sessions_at_once_the_second_waits_in_line(live_short):
    gate = threading.Event()

    def theirs(job):
        job.report(0.4, None, "train")
        while not gate.wait(0.02):
            job.report(0.4)

    job = jobs.start(live_views.SLOT, theirs, owner="someone else")
    try:
        while job.progress < 0.4:
            time.sleep(0.02)
        at = _live()
        assert "Heavy jobs on this server now: 1 running, 0 waiting" in _texts(at, "info")
        assert "yours waits for its turn" in _texts(at, "markdown") and "one at a time" not in _texts(at, "markdown")
        at.button(key="lv_start").click().run()
        assert not at.exception, at.exception
        mine = jobs.get(live_views.SLOT, at.session_state["lv_job"])
        assert mine is not None and mine.state == jobs.QUEUED and mine.place() == 1
        assert "Waiting in line: place 1 of 1" in _texts(at, "info")
        assert jobs.current(live_views.SLOT) is not None and job.state == jobs.RUNNING  # theirs goes on
        at.button(key="lv_leave").click().run()
        at.run()
        assert "You left the line; nothing was run." in _texts(at, "info")
        assert mine.state == jobs.CANCELLED and not mine.points
    finally:
        gate.set()
        assert job.wait(10)


class _Upload:
    def __init__(self, name, data):
        self.name, self.size, self._data = name, len(data), data

    def getvalue(self):
        return self._data


@pytest.mark.parametrize(
    "case, data, want",
    [
        ("empty", b"", "the file is empty"),
        ("binary", b"\x00\x01\x02PNG" * 100, "looks like a binary file"),
        ("oversized", "好".encode() * 400, "over the 20 MB cap"),
        ("encoding", b"\x80\xff" * 50, "not UTF-8 or GB18030 text"),
        ("gb18030", "今天天气很好，我们去公园散步吧。\n".encode("gb18030") * 20, None),
    ],
)
def test_uploads(case, data, want, live_short, monkeypatch):
    monkeypatch.setattr(user_text, "USER_FILE_CAP", 1000)
    monkeypatch.setattr(streamlit, "file_uploader", lambda *a, **k: _Upload(f"{case}.txt", data))
    at = _live()
    at.radio(key="lv_kind").set_value("bert").run()
    at.radio(key="lv_source").set_value("upload").run()
    assert not at.exception, at.exception
    if want is None:
        assert f"{case}\\.txt: 1 KiB of GB18030 text, ready." in _texts(at, "caption") and not at.error
        assert at.button(key="lv_start").disabled is False
    else:
        assert want in _texts(at, "error") and at.error[0].value.startswith(f"{case}\\.txt: ")
        assert at.button(key="lv_start").disabled is True


def test_gpt_offers_the_built_in_corpus_only(live_short):
    at = _live()
    at.radio(key="lv_kind").set_value("gpt").run()
    assert at.radio(key="lv_source").options == ["Built-in corpus (a random part)"]
    assert "GPT trains on the built-in corpus only" in _texts(at, "caption")


def test_live_in_chinese(live_short):
    at = AppTest.from_file(str(PAGES / PAGE), default_timeout=60)
    at.query_params["lang"] = "zh"
    at.query_params["mode"] = "live"
    at.run()
    assert not at.exception and at.button(key="lv_start").label == "开始训练"
    assert at.radio(key="lv_kind").options[2] == "BERT（微型）"


def test_a_finished_transformer_run_is_replayed_with_the_same_views(live_short, monkeypatch):
    """A run that leaves a checkpoint and a timeline (written here in the recorder's schema) gets the replay views."""

    def recorded(session, spec):
        def work(job):
            run = session.new_run(spec)
            write_timeline(run.out)
            for f in ("config.json", "vocab.json", "model.pt"):
                (run.out / f).write_bytes(b"{}")
            run.summary, run.state, run.first_step_s = {"steps": 1000, "tokens_seen": 5000}, "done", 2.0
            job.report(1.0, None, "save")
            return run

        return work

    monkeypatch.setattr(live, "make_work", recorded)
    at = _live()
    at.radio(key="lv_kind").set_value("bert").run()
    at.button(key="lv_start").click().run()
    _until_done(at)
    run = at.session_state["lv_session"].latest()
    assert "BERT (tiny) trained: 1,000 steps, 5,000 tokens" in _texts(at, "success")
    assert [s.value for s in at.subheader][0] == "Replay of your run"
    assert f"live: {run.label}" in _texts(at, "markdown")
    assert at.select_slider[-1].value == len(STEPS) - 1 and len(chart_specs(at)) == 7
    assert at.query_params.get("mode") in ("live", ["live"]) and "model" not in at.query_params
    # above the replay: the heads that form first, over the snapshots, with the numbers and what to notice
    heads = chart_specs(at)[0]
    assert heads["layout"]["title"]["text"].startswith("The heads that form first")
    assert [t["name"] for t in heads["data"]][0].startswith("previous character: layer ") and len(heads["data"]) == 2
    assert all(len(t["y"]) == len(STEPS) for t in heads["data"])
    assert "Previous-character head (layer " in _texts(at, "caption") and "Notice: at step 0 every head" in _texts(
        at, "info"
    )
    # the notice says what this run shows: its random attention formed no head
    v = live_results.head_verdict(live_results.head_formation(replay.load(run.out)))
    assert v["state"] == "forming" and v["end"] < live_results.FORMED_SHARE
    assert (
        f"In this run's {STEPS[-1]:,} steps no head has formed yet: the strongest, layer {v['layer']}, head {v['head']}, "
        f"gives {v['end']:.2f} of its attention to the character just {'before' if v['which'] == 'prev' else 'after'}"
        in _texts(at, "info")
    )


def _timeline_work(session, spec):
    """A running job whose run folder holds a timeline (as a live BERT's saves leave it) until it is cancelled."""

    def work(job):
        run = session.new_run(spec)
        write_timeline(run.out)
        for k in range(1, 100_000):
            time.sleep(0.01)
            job.report(
                k / 100_000, {"s": k / 100, "step": k, "loss": 5.0, "tokens": 10 * k, "tokens_s": 1000.0}, phase="train"
            )
        return run

    return work


def test_a_running_bert_shows_its_heads_so_far(live_short, monkeypatch):
    monkeypatch.setattr(live, "make_work", _timeline_work)
    at = _live()
    at.radio(key="lv_kind").set_value("bert").run()
    at.button(key="lv_start").click().run()
    job = _running_job_with_points(3)
    at.run()
    titles = [s["layout"]["title"]["text"] for s in chart_specs(at)]
    assert titles[0] == "Training loss as it trains" and titles[1].startswith("The heads that form first")
    assert f"So far, at step {STEPS[-1]:,}, no head has formed" in _texts(at, "info")  # the run goes on
    at.button(key="lv_cancel").click().run()
    assert job.wait(10)
    _until_done(at)


def test_a_cancelled_word2vec_keeps_its_vectors(live_short, monkeypatch):
    """make_work marks the run cancelled; what word2vec saved at the cancel is offered like a finished model."""

    def save_then_wait(spec, run, report):
        from ctxlib.training import word2vec

        word2vec.train("tiny", device="cpu", out=run.out, paragraphs=corpus.load("all", "train")[:300])
        while True:
            time.sleep(0.01)
            report(0.5, None, "train")

    monkeypatch.setattr(live, "train", save_then_wait)
    at = _live()
    at.button(key="lv_start").click().run()
    job = jobs.current(live_views.SLOT)
    t0 = time.time()
    while not (at.session_state["lv_session"].latest() and at.session_state["lv_session"].latest().loadable()):
        assert time.time() - t0 < 60
        time.sleep(0.1)
    at.run()
    at.button(key="lv_cancel").click().run()
    assert job.wait(10) and job.state == jobs.CANCELLED
    _until_done(at)
    assert "Kept: the vectors as they were at the cancel" in _texts(at, "info")
    assert at.button(key="lv_use").disabled is False and at.get("download_button")


def test_a_link_to_another_sessions_live_model_says_whose_it_is(live_short):
    for page, qp in (
        ("1_Type_vs_token.py", {"models": "bert,live: bert-7"}),
        ("2_Polysemy_atlas.py", {"model": "live: gpt-2"}),
    ):
        at = AppTest.from_file(str(PAGES / page), default_timeout=120)
        at.query_params["lang"] = "en"
        for k, v in qp.items():
            at.query_params[k] = v
        at.run()
        assert not at.exception, at.exception
        said = _texts(at, "caption")
        assert (
            "names a model trained live in another browser session" in said
            and "belong to the session that trained them" in said
        )
        assert "not an available model" not in said and "unknown" not in said.lower()


def test_switching_the_language_keeps_the_choices_shown(live_short):
    """Streamlit keeps a radio's value in the browser as its label: after a language switch the page must send the
    browser the label of the current choice in the new language, or the radio shows nothing selected."""
    at = _live()
    at.radio(key="lv_kind").set_value("elmo").run()
    at.radio(key="ctxlab_lang_radio").set_value("中文").run()
    assert not at.exception and at.session_state["tr_mode"] == "live" and at.session_state["lv_kind"] == "elmo"
    shown = {k: at.radio(key=k).proto for k in ("tr_mode", "lv_kind", "lv_source")}
    assert {k: (p.set_value, p.raw_value) for k, p in shown.items()} == {
        "tr_mode": (True, "现场训练一个"),
        "lv_kind": (True, "ELMo（微型）"),
        "lv_source": (True, "内置语料（随机一部分）"),
    }
    assert all(p.raw_value in p.options for p in shown.values())
    at.run()  # the next run (the browser now reports the new labels) keeps the choices
    assert not at.exception and at.radio(key="tr_mode").value == "live" and at.radio(key="lv_kind").value == "elmo"
    at.radio(key="tr_mode").set_value("replay").run()
    at.radio(key="ctxlab_lang_radio").set_value("English").run()
    assert (at.radio(key="tr_mode").proto.set_value, at.radio(key="tr_mode").proto.raw_value) == (
        True,
        "Replay the shipped models",
    )

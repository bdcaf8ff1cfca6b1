"""AppTest for the training page: replay of a small timeline (written in the recorder's schema), a GPT timeline
without answers or attention, and a checkpoint folder without any timeline."""
import pytest
from app_pages import PAGES, chart_specs, run_page, use_checkpoint_dir
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
    return [s["layout"]["shapes"][-1]["x0"] for s in chart_specs(at) if s["layout"].get("xaxis", {}).get("type") == "log"]


def test_replay_of_a_small_timeline(timelines):
    at = _run(model="bert", step="10", word="打")
    assert at.radio(key="tr_model").options == ["bert", "gpt"] and at.radio(key="tr_model").value == "bert"
    captions = " ".join(c.value for c in at.caption)
    assert "word2vec: its training records no timeline" in captions
    assert "elmo: no training timeline was recorded" in captions and "python -m ctxlib train elmo" in captions
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
    assert _step_marks(at) == [0.5] * 4 and chart_specs(at)[1]["layout"]["xaxis"]["range"] == pytest.approx(list(pr.bounds[:2]))
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
    assert any("recorded no next-character answers" in v and "python -m ctxlib train gpt" in v for v in infos)
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

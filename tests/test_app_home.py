"""AppTest for the home page: lecture, live 苹果 demo (word2vec's cosine is exactly 1), models table, bad input."""
import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import app_fakes

APP = str(Path(__file__).resolve().parent.parent / "app.py")


@pytest.fixture(autouse=True)
def _no_prewarm(monkeypatch):
    monkeypatch.setenv("CTXLAB_NO_PREWARM", "1")


def _run(lang="en"):
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["lang"] = lang
    at.run()
    assert not at.exception, at.exception
    return at


def test_home_renders_demo_and_models(monkeypatch):
    app_fakes.install(monkeypatch)
    at = _run()
    assert at.title[0].value == "ctxlab: contextual word embeddings"
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    bars = {tr["name"]: tr["text"] for tr in spec["data"]}
    assert bars["word2vec"] == ["1.0000"]  # one vector per type: identical in both sentences
    assert len(bars["elmo"]) == 3 and any(float(x) < 0.999 for x in bars["elmo"])
    assert bars["gpt"] == ["1.0000"] * 5  # left to right only: 苹果 opens both sentences, so nothing differs yet
    table = at.dataframe[0].value
    assert list(table.iloc[:, 0]) == ["word2vec", "elmo", "bert", "gpt"]
    assert list(table.iloc[:, 1]) == ["loaded"] * 4
    md = " ".join(m.value for m in at.markdown)
    assert "2L+1" in md and "[MASK]" in md and "class vs instance" in md
    assert "4. GPT (Radford et al., 2018)" in md and "Transformer decoder" in md and "left-to-right LM" in md
    assert "left to right" in " ".join(c.value for c in at.caption)  # the demo's caption explains GPT's bars
    assert len(at.get("page_link")) >= 2


def test_home_in_chinese_and_missing_models(monkeypatch):
    app_fakes.install(monkeypatch, names=("word2vec",))
    at = _run("zh")
    assert at.title[0].value.startswith("ctxlab：")
    table = at.dataframe[0].value
    assert any("python -m ctxlib train elmo" in str(v) for v in table.iloc[:, 1])


def test_home_gpt_differs_with_different_left_context(monkeypatch):
    app_fakes.install(monkeypatch)
    at = _run()
    at.text_input(key="home_a_w").set_value("我买了苹果")
    at.text_input(key="home_b_w").set_value("他吃苹果").run()
    bars = {tr["name"]: tr["text"] for tr in json.loads(at.get("plotly_chart")[0].proto.spec)["data"]}
    assert len(bars["gpt"]) == 5 and all(float(x) < 0.9999 for x in bars["gpt"][1:])


def test_home_without_gpt(monkeypatch):
    """No GPT checkpoint yet: the other three still work; GPT is listed calmly, with its build command."""
    app_fakes.install(monkeypatch, names=("word2vec", "elmo", "bert"))
    for lang in ("en", "zh"):
        at = _run(lang)
        spec = json.loads(at.get("plotly_chart")[0].proto.spec)
        assert [tr["name"] for tr in spec["data"]] == ["word2vec", "elmo", "bert"]
        table = at.dataframe[0].value
        assert list(table.iloc[:, 0]) == ["word2vec", "elmo", "bert", "gpt"]
        assert "python -m ctxlib train gpt" in str(table.iloc[3, 1]) and table.iloc[3, 1] != table.iloc[0, 1]
        assert not at.error and not at.warning  # a model not built yet is no error of the teacher's
        assert "left to right" not in " ".join(c.value for c in at.caption)  # no caption about bars that are not there
        assert "GPT" in " ".join(m.value for m in at.markdown)  # the lecture still explains it


@pytest.mark.parametrize("field,value,needle", [
    ("home_a_w", "", "Fill in the word and both sentences"),
    ("home_word_w", "", "Fill in the word and both sentences"),
    ("home_b_w", "香蕉很好吃", "Sentence B does not contain"),
    ("home_a_w", "苹果" + "很" * 4998, None),
    ("home_a_w", "很" * 4998 + "苹果", None),  # the word beyond the models' length limits
    ("home_a_w", "苹果<script>alert(1)</script>", None),
])
def test_home_bad_input_with_gpt_alone(monkeypatch, field, value, needle):
    app_fakes.install(monkeypatch, names=("gpt",))
    at = _run()
    at.text_input(key=field).set_value(value).run()
    assert not at.exception and not at.error
    warnings = " ".join(w.value for w in at.warning).replace("\\", "")
    if needle:
        assert needle in warnings and not at.get("plotly_chart")
    else:
        assert at.get("plotly_chart") or warnings  # the bars, or a message saying why not
        assert all("<script>" not in c.proto.spec for c in at.get("plotly_chart"))


def test_home_gpt_link_with_5000_characters(monkeypatch):
    app_fakes.install(monkeypatch)
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update({"lang": "en", "a": "苹果" + "<script>" * 700, "word": "苹果" * 20})
    at.run()
    assert not at.exception
    assert len(at.text_input(key="home_a_w").value) <= 300 and len(at.text_input(key="home_word_w").value) <= 12


@pytest.mark.parametrize("field,value,needle", [
    ("home_b_w", "香蕉很好吃", "Sentence B does not contain"),
    ("home_a_w", "", "Fill in the word and both sentences"),
    ("home_word_w", "龘靐", "Sentence A and B does not contain"),
])
def test_home_bad_input(monkeypatch, field, value, needle):
    app_fakes.install(monkeypatch)
    at = _run()
    at.text_input(key=field).set_value(value).run()
    assert not at.exception
    assert needle in " ".join(w.value for w in at.warning).replace("\\", "")


def test_home_script_in_sentence_is_text(monkeypatch):
    app_fakes.install(monkeypatch)
    at = _run()
    at.text_input(key="home_a_w").set_value("苹果<script>alert(1)</script>").run()
    assert not at.exception
    assert "<script>" not in at.get("plotly_chart")[0].proto.spec


def test_broken_and_missing_checkpoints_give_rebuild_commands(monkeypatch, tmp_path):
    """A corrupt config.json and a missing folder: the page names the file and the command, and does not crash."""
    from ctxlib import checkpoint
    from ctxlib.app import loaders

    (tmp_path / "bert").mkdir()
    (tmp_path / "bert" / "config.json").write_text("{not json", encoding="utf-8")
    monkeypatch.setattr(checkpoint, "CHECKPOINT_DIR", tmp_path)
    loaders.load_encoder.clear()
    try:
        at = _run()
        text = " ".join(c.value for c in at.caption).replace("\\", "")
        assert "bert/config.json is corrupt" in text and "python -m ctxlib train bert" in text
        table = at.dataframe[0].value
        assert all("python -m ctxlib train" in str(v) for v in table.iloc[:, 1])
        assert "No model is available yet" in " ".join(w.value for w in at.warning) and not at.get("plotly_chart")
    finally:
        loaders.load_encoder.clear()

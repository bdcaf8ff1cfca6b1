"""The lecturer's zh leftovers: commands and checkpoint paths sit in one "for teachers" expander per page, the home
table is narrow and names its measures, the ELMo mix names its metric, the Training page leaves <unk> out."""

from pathlib import Path

import app_fakes
import pytest
from app_pages import PAGES, shipped
from streamlit.testing.v1 import AppTest

from ctxlib.app import i18n
from ctxlib.records import TrainingRecord
from ctxlib.viz import training as vt

APP = str(Path(__file__).resolve().parent.parent / "app.py")
TITLE = {"en": "For teachers", "zh": "给教师"}


@pytest.fixture(autouse=True)
def _no_prewarm(monkeypatch):
    monkeypatch.setenv("CTXLAB_NO_PREWARM", "1")


def _student_text(at) -> str:
    """The page's text outside the teachers' expander."""
    inside = {id(m.proto) for e in at.expander if e.label in TITLE.values() for m in e.markdown}
    return " ".join(
        e.value
        for kind in ("warning", "info", "caption", "markdown")
        for e in getattr(at, kind)
        if id(e.proto) not in inside
    )


def _teachers(at, lang) -> str:
    boxes = [e for e in at.expander if e.label == TITLE[lang]]
    assert len(boxes) == 1, [e.label for e in at.expander]
    return " ".join(m.value for m in boxes[0].markdown)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_elmo_page_keeps_the_build_command_for_teachers(lang):
    shipped("elmo")
    at = AppTest.from_file(str(PAGES / "3_ELMo_layers.py"), default_timeout=120)
    at.query_params["lang"] = lang
    at.run()
    assert not at.exception, at.exception
    assert "`python -m ctxlib train elmo`" in _teachers(at, lang)
    student = _student_text(at)
    assert "python -m ctxlib" not in student and "checkpoints/" not in student


def test_home_table_is_narrow_and_measures_are_named(monkeypatch):
    app_fakes.install(monkeypatch)
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["lang"] = "zh"
    at.run()
    assert not at.exception, at.exception
    main, record = (
        next(d.value for d in at.dataframe if ("状态" in d.value.columns) == want) for want in (True, False)
    )
    assert list(main.columns) == ["模型", "状态", "类别", "参数量", "层"]
    assert "checkpoints/<模型>/config.json" in _teachers(at, "zh")
    assert "checkpoints/" not in _student_text(at)
    assert [e.label for e in at.expander].count("给教师") == 1  # the record table is inside it (AppTest: by columns)
    assert list(record.iloc[:, 0]) == ["word2vec", "elmo", "bert", "gpt"]
    assert (
        "指标" in record.columns and "来源" in record.columns
    )  # the fakes record no measures: named in the test below


def test_measures_are_named_in_both_languages():
    from ctxlib.app import model_table

    rec = TrainingRecord.from_summary({"final_loss": 3.29, "valid": {"perplexity_per_char": 51.586, "n_chars": 318786}})
    assert rec.measures() == {"final_loss": 3.29, "valid.perplexity_per_char": 51.586}  # a count is not a measure
    for lang, want in (("zh", "最终训练损失 3.29 · 验证集每字困惑度 51.59"), ("en", "final training loss 3.29")):
        i18n_lang = i18n.lang
        try:
            model_table.lang = lambda: lang  # noqa: E731 (measure_text reads the session's language)
            assert model_table.measure_text(rec.measures()).startswith(want)
        finally:
            model_table.lang = i18n_lang
    assert model_table.measure_text({"odd.key": 1.5}) == "odd.key 1.5"  # a measure without a name keeps its key


def test_mix_result_names_its_metric():
    zh = i18n.lookup(
        "elmo.live.final",
        "zh",
        weights="0.3, 0.7",
        gamma=1.0,
        score=0.829,
        metric=i18n.lookup("labels.metric.accuracy", "zh"),
    )
    assert "留出集准确率 = 0.829" in zh and "得分" not in zh
    assert "held-out accuracy = 0.829" in i18n.lookup(
        "elmo.live.final", "en", weights="", gamma=1.0, score=0.829, metric=i18n.lookup("labels.metric.accuracy", "en")
    )


def test_unk_left_out_of_the_guesses():
    top = [(",", 0.29), ("<unk>", 0.08), ("的", 0.078), ("。", 0.04), ("就", 0.0175)]
    assert vt.answer_text(top, hide=vt.UNKNOWN) == ", 29% · 的 8% · 。 4% · 就 2%"
    assert vt.hidden_share(top) == pytest.approx(0.08)
    assert vt.hidden_share([("好", 0.5)]) == 0.0
    assert "<unk>" in vt.answer_text(top)  # the recorded answers themselves are unchanged


def test_training_page_shows_no_unk_guess():
    shipped("elmo")
    at = AppTest.from_file(str(PAGES / "9_Training.py"), default_timeout=180)
    at.query_params["lang"] = "zh"
    at.query_params["model"] = "elmo"
    at.run()
    assert not at.exception, at.exception
    tables = [d.value for d in at.dataframe if "前向模型（左边的上下文）" in d.value.columns]
    cells = [str(v) for t in tables for v in t.values.ravel()]
    assert cells, [list(d.value.columns) for d in at.dataframe]
    guesses = [c.split("（<unk>")[0] for c in cells if "%" in c]
    assert guesses and not any("<unk>" in g for g in guesses)
    assert any("（<unk>" in c for c in cells)  # the share it took is said

"""The interface language without ?lang=: the browser's locale (st.context.locale) decides. Every Chinese tag (zh,
zh-CN, zh-TW, zh-Hant) gets Chinese, en-US and an unknown or missing locale get English; ?lang= wins over the locale."""

from pathlib import Path

import app_fakes
import pytest
from streamlit.testing.v1 import AppTest

from ctxlib import lesson
from ctxlib.app import i18n

PAGE = str(Path(__file__).resolve().parent.parent / "pages" / "0_Lesson.py")


@pytest.fixture(autouse=True)
def fakes(monkeypatch):
    monkeypatch.setenv("CTXLAB_NO_PREWARM", "1")
    app_fakes.install(monkeypatch)


def _open(locale, **qp) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.context["locale"] = locale
    at.query_params.update(qp)
    at.run()
    assert not at.exception, at.exception
    return at


@pytest.mark.parametrize(
    "locale,lang",
    [
        ("zh", "zh"),
        ("zh-CN", "zh"),
        ("zh-TW", "zh"),
        ("zh-Hant", "zh"),
        ("zh-Hans-CN", "zh"),
        ("ZH-tw", "zh"),
        ("en-US", "en"),
        ("en", "en"),
        ("fr-FR", "en"),
        (None, "en"),
    ],
)
def test_browser_locale_picks_the_language(locale, lang):
    at = _open(locale)
    step = lesson.load("default").steps[0]
    assert at.header[0].value == step.text("title", lang)
    assert at.title[0].value == i18n.lookup("lesson.title", lang)
    assert at.query_params["lang"] in (lang, [lang])  # and the link keeps it


@pytest.mark.parametrize("locale,qp", [("zh-CN", "en"), ("en-US", "zh")])
def test_lang_in_the_link_wins_over_the_locale(locale, qp):
    at = _open(locale, lang=qp)
    assert at.header[0].value == lesson.load("default").steps[0].text("title", qp)

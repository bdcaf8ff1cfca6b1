"""Bad query parameters (issue #17, item 3): on Home, Type vs token and the atlas every parameter a page reads falls
back to its default with a short notice (a caption), never an exception. Each case opens the page with one bad
parameter: an unknown value, a number out of range or not a number, HTML, or 10,000 characters."""

from pathlib import Path

import app_fakes
import pytest
from streamlit.testing.v1 import AppTest
from test_app_atlas import fake_occurrences

from ctxlib import corpus

ROOT = Path(__file__).resolve().parent.parent
HTML, LONG = "<script>alert(1)</script>", "苹" * 10_000


@pytest.fixture(autouse=True)
def fakes(monkeypatch):
    monkeypatch.setenv("CTXLAB_NO_PREWARM", "1")
    monkeypatch.setattr(corpus, "occurrences", fake_occurrences)
    return app_fakes.install(monkeypatch)


def _open(page: str, **qp) -> AppTest:
    at = AppTest.from_file(str(ROOT / page), default_timeout=60)
    at.query_params["lang"] = "en"
    for k, v in qp.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, at.exception
    return at


def _said(at) -> str:
    """Every caption, info and warning on the page (sidebar included), markdown escapes removed."""
    return " ".join(e.value for kind in ("caption", "info", "warning") for e in getattr(at, kind)).replace("\\", "")


def _check(at, value, expected, notice):
    assert value == expected
    assert notice in _said(at), _said(at)
    for chart in at.get("plotly_chart"):
        assert "<script>" not in chart.proto.spec


# -- Type vs token -----------------------------------------------------------------------------------------
TT = "pages/1_Type_vs_token.py"
TT_WIDGETS = {
    "proj": (lambda at: at.radio(key="tt_proj_w").value, "pca", "is not a projection here; showing PCA"),
    "set": (lambda at: at.selectbox(key="tt_set").value, "苹果", "is not an example set here; showing 苹果 (píngguǒ)"),
    "word": (lambda at: at.text_input(key="tt_word").value, "苹果", "is longer than 12 characters; showing 苹果"),
    "near": (lambda at: at.toggle(key="tt_near_w").value, False, "is not 0 or 1 here; showing 0"),
    "models": (
        lambda at: at.multiselect(key="tt_models").value,
        ["word2vec", "elmo", "bert", "gpt"],
        "names no model of this app; left out",
    ),
    "layers": (lambda at: at.selectbox(key="tt_layer_elmo").value, 2, "for a model of this app; left out"),
}


@pytest.mark.parametrize(
    "param,value",
    [
        ("proj", "lda"),
        ("proj", HTML),
        ("proj", LONG),
        ("proj", "1"),
        ("set", "lda"),
        ("set", HTML),
        ("set", LONG),
        ("word", HTML),
        ("word", LONG),
        ("near", "yes"),
        ("near", "2"),
        ("near", HTML),
        ("near", LONG),
        ("models", "lda"),
        ("models", HTML),
        ("models", LONG),
        ("models", ",,,"),
        ("layers", "elmo:x"),
        ("layers", "elmo:-1"),
        ("layers", "elmo:1.5"),
        ("layers", "lda:1"),
        ("layers", HTML),
        ("layers", LONG),
        ("layers", "elmo:" + "9" * 10_000),
    ],
)
def test_type_token_bad_parameter(param, value):
    at = _open(TT, **{param: value})
    get, default, notice = TT_WIDGETS[param]
    if value == ",,,":  # nothing named: the default, and nothing to say
        assert get(at) == default and "names no model" not in _said(at)
        return
    _check(at, get(at), default, notice)
    assert f"{param}={value[:30]}" in _said(at) or param == "word"  # the bad value is quoted, shortened


def test_type_token_notice_quotes_the_value():
    at = _open(TT, proj="lda")
    assert "The link's proj=lda is not a projection here; showing PCA." in _said(at)


def test_type_token_layer_out_of_range():
    at = _open(TT, layers="elmo:99,bert:2")
    assert at.selectbox(key="tt_layer_elmo").value == 2 and at.selectbox(key="tt_layer_bert").value == 2
    assert "The link's layers asks for elmo layer 99, which it does not have (0 to 2); showing layer 2." in _said(at)


def test_type_token_long_sentences_are_cut_with_a_notice():
    """?s= of 10,000 characters: like a long paste, the first 5,000 are used and a warning says so."""
    at = _open(TT, s="苹果很甜\n" * 2000)
    assert "only the first 5,000" in _said(at) and at.get("plotly_chart")


# -- Polysemy atlas ----------------------------------------------------------------------------------------
ATLAS = "pages/2_Polysemy_atlas.py"
AT_WIDGETS = {
    "model": (
        lambda at: at.radio(key="at_model").value,
        "elmo",
        "is not an available model here; showing elmo",
    ),  # ATLAS_DEFAULT
    "colour": (
        lambda at: at.radio(key="at_colour").value,
        "pos",
        "is not a colouring here; showing POS (People's Daily)",
    ),
    "proj": (lambda at: at.radio(key="at_proj").value, "pca", "is not a projection here; showing PCA"),
    "word": (lambda at: at.text_input(key="at_word_w").value, "地", "is longer than 12 characters; showing 地"),
    "cap": (
        lambda at: at.select_slider(key="at_cap").value,
        300,
        "is not one of 50, 100, 200, 300, 500, 1000; showing 300",
    ),
    "k": (lambda at: at.slider(key="at_k").value, 3, "is not a whole number from 2 to 8; showing 3"),
    "layer": (
        lambda at: at.select_slider(key="at_layer").value,
        2,
        "is not a whole number from 0 to 2; showing 2",
    ),  # ELMo
}
NUMBERS = ["abc", "99", "-1", "1.5", "1e3", "²", "9" * 12, HTML, LONG]


@pytest.mark.parametrize(
    "param,value",
    [
        ("model", "lda"),
        ("model", HTML),
        ("model", LONG),
        ("colour", "rainbow"),
        ("colour", HTML),
        ("colour", LONG),
        ("proj", "lda"),
        ("proj", HTML),
        ("proj", LONG),
        ("word", HTML),
        ("word", LONG),
        *[(p, v) for p in ("cap", "k", "layer") for v in NUMBERS],
        ("cap", "250"),
    ],
)
def test_atlas_bad_parameter(param, value):
    at = _open(ATLAS, **{param: value})
    get, default, notice = AT_WIDGETS[param]
    _check(at, get(at), default, notice)
    assert len(at.get("plotly_chart")) == 2  # the page still draws the atlas and the self-similarity chart


def test_atlas_notice_quotes_the_value():
    at = _open(ATLAS, cap="250", model="lda")
    said = _said(at)
    assert "The link's cap=250 is not one of 50, 100, 200, 300, 500, 1000; showing 300." in said
    assert "The link's model=lda is not an available model here; showing elmo." in said


# -- Home (app.py) -----------------------------------------------------------------------------------------
HOME = "app.py"
HOME_WIDGETS = {
    "word": (lambda at: at.text_input(key="home_word_w").value, "苹果", "is longer than 20 characters; showing 苹果"),
    "a": (lambda at: at.text_input(key="home_a_w").value, "我每天吃一个苹果", "is longer than 300 characters"),
    "b": (lambda at: at.text_input(key="home_b_w").value, "这个苹果又甜又脆", "is longer than 300 characters"),
    "c": (lambda at: at.text_input(key="home_c_w").value, "苹果公司发布了新手机", "is longer than 300 characters"),
}


@pytest.mark.parametrize("param,value", [("word", HTML), ("word", LONG), ("a", LONG), ("b", LONG), ("c", LONG)])
def test_home_bad_parameter(param, value):
    at = _open(HOME, **{param: value})
    get, default, notice = HOME_WIDGETS[param]
    _check(at, get(at), default, notice)


@pytest.mark.parametrize("param,value", [("a", HTML), ("b", "苹果" + HTML)])
def test_home_html_in_a_sentence_is_text(param, value):
    """A sentence is the user's text: HTML in it is kept and shown as text (never rendered), no notice needed."""
    at = _open(HOME, **{param: value})
    assert at.text_input(key=f"home_{param}_w").value == value
    for chart in at.get("plotly_chart"):
        assert "<script>" not in chart.proto.spec


# -- ?lang= (read by ctxlib.app.i18n on every page) --------------------------------------------------------
@pytest.mark.parametrize("page", [HOME, TT, ATLAS])
@pytest.mark.parametrize("value", ["fr", HTML, LONG])
def test_bad_lang(page, value):
    at = _open(page, lang=value)
    assert at.query_params["lang"] in ("en", ["en"], "zh", ["zh"])  # a language of the app
    assert "is not a language" in _said(at), _said(at)

"""The URL-state helpers (ctxlib/app/state.py) and the language helpers (ctxlib/app/i18n.py) one by one, in a
one-line Streamlit script: what a link's parameter gives, the notice a bad one gets, and what the session keeps.
(The page tests, test_url_params.py and test_url_edges.py, reach the same code through whole pages; these are the
cases bench/mutation.sh's `state` scope found no page test telling apart.)"""

import string

import pytest
from streamlit.testing.v1 import AppTest

from ctxlib.app import i18n


def _script(fn, args, kwargs):
    import streamlit as st

    from ctxlib.app import i18n, state

    call = st.session_state.get("_call")  # a later run's (args, kwargs), set by the test
    a, kw = call if call else (args, kwargs)
    st.session_state["out"] = getattr(state if hasattr(state, fn) else i18n, fn)(*a, **kw)


def _run(fn, *args, qp=None, session=None, **kwargs) -> AppTest:
    at = AppTest.from_function(_script, args=(fn, args, kwargs), default_timeout=30)
    at.query_params.update({"lang": "en", **(qp or {})})
    for k, v in (session or {}).items():
        at.session_state[k] = v
    at.run()
    assert not at.exception, at.exception
    return at


def _again(at, *args, **kwargs) -> AppTest:
    at.session_state["_call"] = (args, kwargs)
    at.run()
    assert not at.exception, at.exception
    return at


def _notes(at) -> list[str]:
    return [c.value.replace("\\", "") for c in at.caption]


def _en(msg_id, **values) -> str:
    return i18n.lookup(msg_id, "en", **values)


# integer: a whole number in [lo, hi] (and among `options`), else the default with a notice; always clamped


@pytest.mark.parametrize("raw,want", [("0", 0), ("9", 9), (" 5 ", 5), ("-0", 0)])
def test_integer_takes_a_whole_number_in_range(raw, want):
    at = _run("integer", "k", "n", 3, 0, 9, qp={"n": raw})
    assert at.session_state["out"] == want and at.session_state["k"] == want and _notes(at) == []


@pytest.mark.parametrize("raw", ["10", "-1", "²", "1.5", "abc", "1234567890"])
def test_integer_out_of_range_or_not_a_number_gives_the_default_and_says_so(raw):
    at = _run("integer", "k", "n", 3, 0, 9, qp={"n": raw})
    assert at.session_state["out"] == 3
    assert _notes(at) == [_en("common.url.bad_number", param="n", value=raw, lo=0, hi=9, default=3)]


def test_integer_not_among_the_options_names_them():
    at = _run("integer", "k", "n", 4, 0, 16, [2, 4, 8], qp={"n": "3"})
    assert at.session_state["out"] == 4
    assert _notes(at) == [_en("common.url.bad_option", param="n", value="3", options="2, 4, 8", default=4)]
    assert _run("integer", "k", "n", 4, 0, 16, [2, 4, 8], qp={"n": "8"}).session_state["out"] == 8


@pytest.mark.parametrize("kept,want", [(12, 9), (-3, 0), (7, 7)])
def test_integer_clamps_a_stale_session_value(kept, want):
    """A value the session kept from another model (layer 12 of 13) is clamped to this one's range, silently."""
    at = _run("integer", "k", "n", 3, 0, 9, qp={"n": "1"}, session={"k": kept})
    assert at.session_state["out"] == want and _notes(at) == []


@pytest.mark.parametrize("kept,want", [(5, 4), (7, 8), (1, 2), (3, 2)])
def test_integer_snaps_a_kept_value_to_the_nearest_option(kept, want):
    """(Ties go to the first of the options.)"""
    assert _run("integer", "k", "n", 4, 0, 16, [2, 4, 8], session={"k": kept}).session_state["out"] == want


def test_integer_reads_the_link_on_the_first_run_only():
    at = _run("integer", "k", "n", 3, 0, 9, qp={"n": "6"})
    at.query_params["n"] = "2"
    assert _again(at, "k", "n", 3, 0, 9).session_state["out"] == 6


# notice: the bad value quoted, cut after SHOWN characters


@pytest.mark.parametrize("n,shown", [(30, "x" * 30), (31, "x" * 30 + "…")])
def test_a_long_bad_value_is_cut_in_the_notice(n, shown):
    at = _run("choice", "k", "c", ["a", "b"], qp={"c": "x" * n})
    assert _notes(at) == [_en("common.url.bad_choice", param="c", value=shown, what="one of the choices", default="a")]


def test_a_notice_shows_markup_as_text():
    at = _run("choice", "k", "c", ["a", "b"], qp={"c": "**b**"})
    assert at.caption[0].value.startswith("The link's c=\\*\\*b\\*\\* is not")


# init and choice


def test_init_takes_the_link_then_keeps_the_session_value():
    at = _run("init", "k", "w", "苹果", qp={"w": "手机"})
    assert at.session_state["out"] == "手机" and _notes(at) == []
    at.query_params["w"] = "电脑"
    assert _again(at, "k", "w", "苹果").session_state["out"] == "手机"
    assert _run("init", "k", "w", "苹果").session_state["out"] == "苹果"


@pytest.mark.parametrize("n,ok", [(5, True), (6, False)])
def test_init_refuses_a_text_longer_than_its_box(n, ok):
    at = _run("init", "k", "w", "苹果" * 20, 5, qp={"w": "字" * n})
    assert at.session_state["out"] == ("字" * n if ok else "苹果" * 20)
    assert _notes(at) == ([] if ok else [_en("common.url.too_long", param="w", max=5, default=("苹果" * 20)[:30])])


def test_choice_takes_an_option_once_and_names_the_default_when_bad():
    at = _run("choice", "k", "c", ["pca", "tsne"], qp={"c": "tsne"})
    assert at.session_state["out"] == "tsne" and _notes(at) == []
    at.query_params["c"] = "pca"
    assert _again(at, "k", "c", ["pca", "tsne"]).session_state["out"] == "tsne"
    bad = _run("choice", "k", "c", ["pca", "tsne"], "a projection", {"pca": "PCA"}, qp={"c": "lda"})
    assert bad.session_state["out"] == "pca"
    assert _notes(bad) == [_en("common.url.bad_choice", param="c", value="lda", what="a projection", default="PCA")]
    named = _run("choice", "k", "c", ["pca", "tsne"], None, str.upper, qp={"c": "lda"})
    assert _notes(named) == [
        _en("common.url.bad_choice", param="c", value="lda", what="one of the choices", default="PCA")
    ]


# layer: a model switch keeps the relative depth


def test_layer_keeps_the_relative_depth_when_the_model_changes():
    at = _run("layer", "L", "layer", 13)
    assert at.session_state["out"] == 12 and at.session_state["L_was"] == (12, 13)  # the top layer by default
    assert _again(at, "L", "layer", 4).session_state["out"] == 3  # the top stays the top
    at.session_state["L"] = 1
    assert _again(at, "L", "layer", 7).session_state["out"] == 2  # layer 1 of 4 -> 2 of 7
    assert _again(at, "L", "layer", 7).session_state["out"] == 2  # same model: unchanged


def test_layer_remembers_the_depth_when_the_widget_was_not_drawn():
    """A run without the widget (Streamlit drops its state): the kept (layer, n) still moves it to the same depth."""
    at = _run("layer", "L", "layer", 5, session={"L_was": (2, 5)})
    assert at.session_state["out"] == 2
    at = _run("layer", "L", "layer", 9, session={"L_was": (2, 5)})
    assert at.session_state["out"] == 4


# flag: a toggle mirrored into the link


def test_flag_sets_and_clears_the_parameter():
    at = _run("flag", "t", "near", session={"t": True})
    assert at.query_params["near"] in ("1", ["1"])
    at.session_state["t"] = False
    _again(at, "t", "near")
    assert "near" not in at.query_params
    assert "near" not in _run("flag", "t", "near", session={"t": False}).query_params


# model_list and layer_choices


def test_model_list_keeps_known_models_and_names_the_others():
    at = _run("model_list", qp={"models": "bert,,foo,elmo,live: x"})
    assert at.session_state["out"] == ["bert", "elmo"]
    assert _notes(at) == [
        _en("live.url.elsewhere", param="models", value="live: x"),
        _en("common.url.bad_models", param="models", value="foo"),
    ]
    assert _notes(_run("model_list", qp={"models": "bert"})) == []


def test_layer_choices_keep_model_colon_layer_only():
    at = _run("layer_choices", qp={"layers": "elmo:2,bert:-1,bert:x,foo:1,gpt,bert:10"})
    assert at.session_state["out"] == {"elmo": 2, "bert": 10}
    assert _notes(at) == [_en("common.url.bad_layers", param="layers", value="bert:-1,bert:x,foo:1,gpt")]
    assert _notes(_run("layer_choices", qp={"layers": "elmo:1"})) == []


# i18n


def test_lookup_falls_back_to_english_then_to_the_id(monkeypatch):
    monkeypatch.setitem(i18n.catalogue("en"), "test.only_en", "only {x}")
    assert i18n.lookup("test.only_en", "zh", x="English") == "only English"
    assert i18n.lookup("test.only_en", "zh") == "only {x}"
    assert i18n.lookup("test.nowhere", "zh") == "test.nowhere"


def test_catalogue_ids_follow_the_toml_tables():
    """strings/en/common.toml's [url] table, key bad_choice: id common.url.bad_choice, text as written."""
    assert i18n.catalogue("en")["common.url.bad_choice"].startswith("The link's {param}={value}")
    assert all(k.count(".") >= 1 and not k.startswith(".") for k in i18n.catalogue("zh"))


def test_escape_md_escapes_every_markdown_special():
    specials = "\\`*_{}[]()#+-.!|<>$~"
    assert i18n.escape_md(specials) == "".join("\\" + c for c in specials)
    assert i18n.escape_md("苹果 a1") == "苹果 a1" and i18n.escape_md(3) == "3"
    plain = string.ascii_letters + string.digits + " ,:;'\"?@%&=/"  # no Markdown special: shown as typed
    assert i18n.escape_md(plain) == plain


def test_prose_falls_back_to_english_then_the_name(tmp_path, monkeypatch):
    (tmp_path / "en" / "lecture").mkdir(parents=True)
    (tmp_path / "en" / "lecture" / "t.md").write_text("  English text\n", encoding="utf-8")
    monkeypatch.setattr(i18n, "STRINGS_DIR", tmp_path)
    i18n._prose.cache_clear()
    try:
        assert i18n._prose("zh", "t") == "English text" and i18n._prose("zh", "nothing") == "nothing"
        (tmp_path / "zh" / "lecture").mkdir(parents=True)
        (tmp_path / "zh" / "lecture" / "t2.md").write_text("中文", encoding="utf-8")
        assert i18n._prose("zh", "t2") == "中文"
    finally:
        i18n._prose.cache_clear()


def _lang_script():
    import streamlit as st

    from ctxlib.app import i18n

    st.session_state["out"] = (i18n.lang(), i18n.bad_lang_param(), i18n.bad_lang_param())


@pytest.mark.parametrize(
    "qp,locale,lang,bad",
    [("zh", "en-US", "zh", None), ("en", "zh-CN", "en", None), ("fr", "zh-CN", "zh", "fr"), (None, None, "en", None)],
)
def test_lang_from_the_link_else_the_locale_and_a_bad_link_told_once(qp, locale, lang, bad):
    at = AppTest.from_function(_lang_script, default_timeout=30)
    at.context["locale"] = locale
    if qp:
        at.query_params["lang"] = qp
    at.run()
    assert not at.exception, at.exception
    assert at.session_state["out"] == (lang, bad, None)


def test_a_fresh_catalogue_has_one_dotted_id_per_toml_entry():
    """Read again, uncached (as a new server process does): [url] bad_choice in common.toml is common.url.bad_choice."""
    import tomllib

    fresh = i18n.catalogue.__wrapped__("en")
    with (i18n.STRINGS_DIR / "en" / "common.toml").open("rb") as fh:
        url = tomllib.load(fh)["url"]
    assert {k: fresh[f"common.url.{k}"] for k in url} == {k: str(v) for k, v in url.items()}
    assert fresh == i18n.catalogue("en")


def test_prose_reads_the_lecture_text_in_the_session_language():
    name = sorted(p.stem for p in (i18n.STRINGS_DIR / "en" / "lecture").glob("*.md"))[0]
    at = _run("prose", name)
    assert at.session_state["out"] == i18n._prose("en", name) != name


def test_several_bad_models_are_listed_with_commas():
    at = _run("model_list", qp={"models": "foo,bert,bar,live: x,live: y"})
    assert _notes(at) == [
        _en("live.url.elsewhere", param="models", value="live: x,live: y"),
        _en("common.url.bad_models", param="models", value="foo,bar"),
    ]


def test_the_language_switch_is_one_labelled_row_in_the_sidebar_and_kept_in_the_link():
    at = _run("language_switch")
    (switch,) = at.sidebar.radio
    assert (switch.label, switch.options, switch.value, switch.horizontal) == (
        "语言 / Language",
        ["中文", "English"],
        "English",
        True,
    )
    for choice, code in (("中文", "zh"), ("English", "en"), ("中文", "zh")):
        at.sidebar.radio[0].set_value(choice).run()
        assert not at.exception, at.exception
        assert (at.session_state["ctxlab_lang"], at.query_params["lang"]) == (code, code)
        assert at.sidebar.radio[0].value == choice

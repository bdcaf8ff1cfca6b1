"""Chinese mode is Chinese: the pages' layer names, axis titles, ticks, legends, head kinds, source names and table
headers come from the catalogue (strings/zh/labels.toml), and the sidebar and tab use the pages' translated names."""

import json
import re
from pathlib import Path

import app_fakes
import pytest
from app_pages import PAGES, chart_specs, shipped
from streamlit.testing.v1 import AppTest

from ctxlib import corpus
from ctxlib.app import i18n

APP = str(Path(__file__).resolve().parent.parent / "app.py")
ENGLISH = re.compile(
    r"\b(layers?|embeddings|accuracy|majority|step|head|from|uniform|type vector|char-CNN|previous char|"
    r"next char|broad|mixed|cosine between|vectors|People's Daily|reviews)\b"
)


@pytest.fixture(autouse=True)
def _no_prewarm(monkeypatch):
    monkeypatch.setenv("CTXLAB_NO_PREWARM", "1")


@pytest.fixture
def fakes(monkeypatch):
    from test_app_atlas import fake_occurrences

    monkeypatch.setattr(corpus, "occurrences", fake_occurrences)
    return app_fakes.install(monkeypatch)


def _zh(path: str, timeout: int = 90, **qp) -> AppTest:
    at = AppTest.from_file(path, default_timeout=timeout)
    at.query_params.update({"lang": "zh", **qp})
    at.run()
    assert not at.exception, at.exception
    return at


def _labels(spec: dict) -> list[str]:
    """What a chart shows as text besides the data: axis titles and ticks, legend names, annotations, the title."""
    lay, out = spec["layout"], []
    for k, ax in lay.items():
        if re.fullmatch(r"[xy]axis\d*", k):
            title = ax.get("title", "")
            out.append(title.get("text", "") if isinstance(title, dict) else title)
            out += [str(t) for t in ax.get("ticktext", [])]
    out += [a.get("text", "") for a in lay.get("annotations", [])]
    out.append(
        (lay.get("title") or {}).get("text", "") if isinstance(lay.get("title"), dict) else lay.get("title") or ""
    )
    out += [tr.get("name", "") for tr in spec["data"] if tr.get("showlegend", True) is not False]
    out += [
        str(x)
        for tr in spec["data"]
        if tr.get("type") in ("bar", None)
        for x in (tr.get("x") or [])
        if isinstance(x, str)
    ]
    return [t for t in out if t]


def _english(at) -> list[str]:
    return [t for spec in chart_specs(at) for t in _labels(spec) if ENGLISH.search(t)]


def test_layer_labels_in_both_languages():
    cases = {
        "embeddings": ("嵌入层", "embeddings"),
        "layer 3": ("第 3 层", "layer 3"),
        "biLSTM layer 2": ("biLSTM 第 2 层", "biLSTM layer 2"),
        "char-CNN token layer": ("字符 CNN 词元层", "char-CNN token layer"),
        "type vector (word2vec)": ("类型向量（word2vec）", "type vector (word2vec)"),
        "mix": ("mix", "mix"),
    }
    from ctxlib.app import widgets

    for code in ("zh", "en"):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(widgets, "msg", lambda msg_id, /, **v: i18n.lookup(msg_id, code, **v))
            for name, want in cases.items():
                assert widgets.layer_label(name) == want[code == "en"], (code, name)


def test_home_in_chinese(fakes):
    at = _zh(APP, 60)
    assert not _english(at), _english(at)
    rows = [
        y for tr in json.loads(at.get("plotly_chart")[0].proto.spec)["data"] if tr["type"] == "bar" for y in tr["y"]
    ]
    assert not [y for y in rows if ENGLISH.search(y) or "half" in y], rows  # the demo's row labels
    assert any("嵌入层" in y for y in rows) and any("第 2 层 · 前向一半" in y for y in rows)


@pytest.mark.parametrize("code", ["zh", "en"])
def test_navigation_names_and_url_paths(fakes, code):
    """The sidebar lists the pages under their names in the session's language; each keeps its old URL path
    (/Type_vs_token, ...: Streamlit's path from the file name), so shared links still open it."""
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["lang"] = code
    at.run()
    assert not at.exception, at.exception
    pages = {info["url_pathname"]: info["page_name"] for info in at._registered_pages.values()}
    want = {
        p.stem.split("_", 1)[1]: i18n.lookup(f"pages.{p.stem.split('_', 1)[1]}.label", code)
        for p in sorted(PAGES.glob("*.py"))
    }
    assert pages == {"": i18n.lookup("pages.Home.label", code), **want}
    assert at.session_state["ctxlab_tab_title"] == "ctxlab"  # the home page's tab


def test_type_token_in_chinese(fakes):
    at = _zh(str(PAGES / "1_Type_vs_token.py"))
    assert not _english(at), _english(at)
    titles = [s["layout"]["title"]["text"] for s in chart_specs(at)]
    assert any("第 3 层" in t for t in titles)  # bert's top layer in the map's title
    assert at.selectbox(key="tt_layer_bert").options[0] == "0: 嵌入层"
    assert any(list(df.value.columns) == ["模型", "层", "准确率"] for df in at.dataframe)
    assert any("第 1 层" in str(v) for df in at.dataframe for v in df.value.get("层", []))


def test_atlas_in_chinese(fakes):
    at = _zh(str(PAGES / "2_Polysemy_atlas.py"), 60, colour="source", model="elmo")
    assert not _english(at), _english(at)
    legend = [tr.get("name") for tr in chart_specs(at)[0]["data"]]
    assert any(n.startswith("人民日报 1998 年 1 月") for n in legend) and any(
        n.startswith("商品/酒店评论") for n in legend
    )
    assert at.select_slider(key="at_layer").options == ["0: 嵌入层", "1: 第 1 层", "2: 第 2 层"]
    assert "第 2 层" in chart_specs(at)[0]["layout"]["title"]["text"]


def test_attention_in_chinese_with_gpt(fakes):
    at = _zh(str(PAGES / "4_BERT_attention.py"), model="gpt", word="苹果")
    assert not _english(at), _english(at)
    model_view = chart_specs(at)[0]
    assert (
        model_view["layout"]["xaxis"]["ticktext"][0] == "头 1"
        and model_view["layout"]["yaxis"]["ticktext"][0] == "第 1 层"
    )
    assert chart_specs(at)[1]["layout"]["yaxis"]["title"]["text"] == "从 ↓  到 →"
    kinds = {str(v) for df in at.dataframe for v in df.value.get("类型", df.value.iloc[:, 2])}
    assert kinds and kinds <= {"前一个字", "后一个字", "自身", "[SEP]", "[CLS]", "分散", "混合"}, kinds
    drift = chart_specs(at)[-1]["layout"]["xaxis"]
    assert drift["ticktext"][0] == "嵌入层" and drift["title"]["text"] == "层"
    assert chart_specs(at)[-1]["layout"]["yaxis"]["title"]["text"] == "cos(各层的 苹果, 第 0 层的 苹果)"


def test_elmo_in_chinese():
    shipped("elmo")
    at = _zh(str(PAGES / "3_ELMo_layers.py"), 120)
    assert not _english(at), _english(at)
    subtitles = [a["text"] for a in chart_specs(at)[1]["layout"]["annotations"]]
    assert "两两余弦" in subtitles and any("个向量" in t for t in subtitles)

"""AppTest for the Type vs token page: default example, sense accuracy, bad input, URL state."""

import json
from pathlib import Path

import app_fakes
import numpy as np
import pytest
from app_pages import teachers_text
from streamlit.testing.v1 import AppTest

from ctxlib import checkpoint
from ctxlib.examples import EXAMPLE_SETS

PAGE = str(Path(__file__).resolve().parent.parent / "pages" / "1_Type_vs_token.py")
TITLE = "Type vs token: how many vectors does a word have?"


def _xs(trace):
    """x values of a trace from a plotly spec (plotly 6+ ships numpy arrays as base64 typed arrays)."""
    import base64

    import numpy as np

    x = trace["x"]
    if isinstance(x, dict):
        return np.frombuffer(base64.b64decode(x["bdata"]), dtype=np.dtype(x["dtype"])).tolist()
    return [v for v in x if v is not None]


def _run(at=None, **qp):
    at = at or AppTest.from_file(PAGE, default_timeout=60)
    for k, v in qp.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, at.exception
    return at


def _texts(at, kind):
    return " ".join(e.value for e in getattr(at, kind))


def _open_tab(at, name: str):
    """Click one of the page's tabs (only the open one runs): "accuracy", "nearest", "segmentation", "export"."""
    from ctxlib.app.i18n import lookup

    at.session_state["tt_tab"] = lookup(f"type_token.tabs.{name}", "en")
    at.run()
    assert not at.exception, at.exception
    return at


@pytest.fixture
def fakes(monkeypatch):
    return app_fakes.install(monkeypatch)


def test_default_example_renders_four_models(fakes):
    at = _run(lang="en")
    assert [t.value for t in at.title] == [TITLE]
    assert at.multiselect(key="tt_models").value == ["word2vec", "elmo", "bert", "gpt"]
    charts = at.get("plotly_chart")
    assert len(charts) == 4 * 2 + 1  # a map and a heatmap per model, and the sense-accuracy chart
    spec = json.loads(charts[0].proto.spec)
    hover = [h for tr in spec["data"] if tr.get("text") for h in tr["text"]]
    assert any("【苹果】" in h for h in hover)
    names = [tr.get("name") for tr in spec["data"]]
    assert "水果" in names and "品牌" in names
    # word2vec: every token is the type vector, so all points project onto the star
    xs = {round(x, 6) for tr in spec["data"][1:] for x in _xs(tr)}
    assert xs == {0.0}
    assert not at.error


def test_example_set_switch_and_url(fakes):
    at = _run(lang="zh")
    at.selectbox(key="tt_set").set_value("活动").run()
    assert at.text_input(key="tt_word").value == "活动"
    assert at.text_area(key="tt_text").value.count("\n") == len(EXAMPLE_SETS["活动"]["sentences"]) - 1
    assert at.query_params["set"] == ["活动"] or at.query_params["set"] == "活动"
    assert at.title[0].value.startswith("类型与实例")


def test_shared_link_restores_state(fakes):
    at = _run(
        lang="en", word="打", s="我打电话 | a\n他打篮球 | b\n你打电话 | a\n她打排球 | b", models="elmo", proj="pca"
    )
    assert at.text_input(key="tt_word").value == "打"
    assert at.multiselect(key="tt_models").value == ["elmo"]
    assert len(at.get("plotly_chart")) == 2 + 1


@pytest.mark.parametrize(
    "word,text,kind,needle",
    [
        ("苹果", "", "error", "at least one sentence"),
        ("", "苹果真好吃", "error", "target word"),
        ("苹果", "香蕉很甜\n苹果真好吃 | 水果\n苹果手机 | 品牌", "warning", "Sentence 1 does not contain"),
        ("苹果", "香蕉很甜\n梨很脆", "error", "No sentence contains"),
        ("苹果", "苹果很甜" * 1300, "warning", "only the first 5,000"),
        ("龘靐", "龘靐真好吃\n我爱龘靐", "warning", "word2vec: '龘靐' is not in the vocabulary"),
        ("苹果", "苹果真好吃\n苹果手机\n苹果真好吃", "info", "Sentence 3 repeats sentence 1"),
    ],
)
def test_bad_input_gives_a_message(fakes, word, text, kind, needle):
    at = _run(lang="en")
    at.text_input(key="tt_word").set_value(word)
    at.text_area(key="tt_text").set_value(text).run()
    assert not at.exception
    assert needle.replace(".", "") in _texts(at, kind).replace("\\", "").replace(".", ""), _texts(at, kind)


def test_script_tag_is_shown_as_text(fakes):
    at = _run(lang="en")
    at.text_area(key="tt_text").set_value("苹果<script>alert(1)</script>好吃 | a\n苹果<b>手机</b> | b").run()
    assert not at.exception
    for chart in at.get("plotly_chart"):
        assert "<script>" not in chart.proto.spec and "<b>手机" not in chart.proto.spec
    assert "&lt;script&gt;" in at.get("plotly_chart")[0].proto.spec
    seg = [d for d in _open_tab(at, "segmentation").dataframe]
    assert any("<script>" in str(d.value.to_dict()) for d in seg)  # shown literally in the table


def test_missing_models_are_greyed_with_command(monkeypatch):
    app_fakes.install(monkeypatch, names=("word2vec",))
    at = _run(lang="en")
    side = teachers_text(at)
    assert all(f"python -m ctxlib train {m}" in side for m in ("elmo", "bert", "gpt"))
    assert len(at.get("plotly_chart")) == 3  # word2vec's map, heatmap and (flat) accuracy chart


def test_real_checkpoints_if_present():
    names = [m for m in ("word2vec", "elmo", "bert") if m in checkpoint.available()]
    if not names:
        pytest.skip("no checkpoints in checkpoints/ yet (python -m ctxlib train word2vec)")
    import streamlit as st

    st.cache_data.clear()
    at = _run(lang="en")
    assert at.title[0].value == TITLE
    assert not at.error, [e.value for e in at.error]
    assert len(at.get("plotly_chart")) >= 2 * len(names)


def test_tsne_projection(fakes):
    at = _run(lang="en", models="elmo")
    at.radio(key="tt_proj_w").set_value("tsne").run()
    assert not at.exception and at.query_params["proj"] in ("tsne", ["tsne"])
    assert len(at.get("plotly_chart")) == 3


def test_nearest_words_and_segmentation(fakes):
    at = _open_tab(_run(lang="en"), "nearest")
    at.toggle(key="tt_near_w").set_value(True).run()
    assert not at.exception and at.query_params["near"] in ("1", ["1"])
    near = [tb.value for tb in at.table]  # st.table (issue #13.8: the dataframe cut off the last model's column)
    near = [tb for tb in near if any(c.startswith("elmo (random pairs ≈ ") for c in tb.columns)]
    assert near and sum(c.split(" ")[0] in ("word2vec", "elmo", "bert", "gpt") for c in near[0].columns) == 4
    col = [c for c in near[0].columns if c.startswith("elmo")][0]
    assert near[0][col].str.contains(r"\d\.\d\d").all()
    assert not near[0][col].str.contains("苹果 ").any()  # the word itself is excluded
    tables = [d.value for d in _open_tab(at, "segmentation").dataframe]
    seg = [tb for tb in tables if "bert: pooled characters" in tb.columns][0]
    assert set(seg["bert: pooled characters"]) == {"苹 + 果"}
    assert any("【苹果】" in v for v in seg["word2vec / elmo"])  # word models share one jieba segmentation


def test_example_set_titles_are_in_both_catalogues():
    from ctxlib.app.i18n import catalogue

    for lang in ("zh", "en"):
        assert all(f"type_token.sets.{k}" in catalogue(lang) for k in EXAMPLE_SETS), lang


def test_type_token_numbers():
    import numpy as np

    from ctxlib import explore

    enc = app_fakes.fakes()["elmo"]
    texts = ["苹果真好吃", "苹果手机很好用", "我吃苹果"]
    d = explore.word_profile(enc, texts, "苹果")
    X = explore.type_token_points(d, 1)
    assert X.shape == (4, d.vecs.shape[2]) and np.allclose(X[0], d.type_vec[1]) and np.allclose(X[1:], d.vecs[:, 1])
    cos = explore.mean_type_cosine(d, 1)
    assert isinstance(cos, float) and -1 <= cos < 1  # tokens move away from the context-free vector
    assert explore.mean_type_cosine(d, 0) > cos  # layer 0 is context-free: every token equals the type vector
    assert np.isclose(explore.mean_type_cosine(d, 0), 1.0)
    rows = explore.accuracy_rows({"elmo": (["a", "b"], [0.5, 2 / 3])})
    assert rows == [
        {"model": "elmo", "layer": "a", "accuracy": 0.5},
        {"model": "elmo", "layer": "b", "accuracy": 0.667},
    ]


def test_gpt_selected(fakes):
    """GPT alone: its map and heatmap, the per-layer accuracy, the pooled characters, the CSV."""
    at = _run(lang="en", models="gpt", layers="gpt:2")
    assert not at.error and at.multiselect(key="tt_models").value == ["gpt"]
    assert at.selectbox(key="tt_layer_gpt").value == 2 and at.query_params["layers"] in ("gpt:2", ["gpt:2"])
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    assert len(specs) == 3 and specs[0]["layout"]["title"]["text"] == "gpt · layer 2"
    acc = specs[2]
    assert [tr["name"] for tr in acc["data"]] == ["gpt"] and len(_xs(acc["data"][0])) == 5
    tables = [d.value for d in at.dataframe]
    assert any(tb.columns.tolist() == ["model", "layer", "accuracy"] and set(tb["model"]) == {"gpt"} for tb in tables)
    tables = [d.value for d in _open_tab(at, "segmentation").dataframe]
    seg = [tb for tb in tables if "gpt: pooled characters" in tb.columns][0]
    assert set(seg["gpt: pooled characters"]) == {"苹 + 果"}
    assert len(_open_tab(at, "export").get("download_button")) == 1  # the CSV (rows: test_gpt_csv_and_left_context)


def test_gpt_csv_and_left_context(fakes):
    """The CSV holds GPT's rows; GPT's token sits on its type vector exactly where the word opens the sentence."""
    from ctxlib import explore

    texts = ("苹果真好吃", "我买了苹果")
    d = explore.word_profile(fakes["gpt"], list(texts), "苹果")
    assert d.layer_names == ["embeddings", "layer 1", "layer 2", "layer 3", "layer 4"] and not d.word_level
    assert np.allclose(d.vecs[0], d.type_vec) and not np.allclose(d.vecs[1, 1:], d.type_vec[1:])
    rows = (
        explore.vectors_csv(
            {"gpt": d, "elmo": explore.word_profile(fakes["elmo"], list(texts), "苹果")}, texts, ["a", "b"], "苹果"
        )
        .decode("utf-8-sig")
        .splitlines()
    )
    assert sum(r.startswith("gpt,") for r in rows) == 5 * 2 and sum(r.startswith("elmo,") for r in rows) == 3 * 2


def test_gpt_missing_the_other_three_work(monkeypatch):
    app_fakes.install(monkeypatch, names=("word2vec", "elmo", "bert"))
    for lang in ("en", "zh"):
        at = _run(lang=lang, models="gpt,elmo")  # a shared link naming GPT, opened where it is not built
        assert at.multiselect(key="tt_models").value == ["elmo"] and at.multiselect(key="tt_models").options == [
            "word2vec",
            "elmo",
            "bert",
        ]
        assert "python -m ctxlib train gpt" in teachers_text(at)
        assert not at.error and len(at.get("plotly_chart")) == 3
    at = _run(lang="en")
    assert at.multiselect(key="tt_models").value == ["word2vec", "elmo", "bert"] and len(at.get("plotly_chart")) == 7


@pytest.mark.parametrize(
    "word,text,kind,needle",
    [
        ("苹果", "", "error", "at least one sentence"),
        ("", "苹果真好吃", "error", "target word"),
        ("苹果", "香蕉很甜\n梨很脆", "error", "No sentence contains"),
        ("苹果", "苹果很甜" * 1300, "warning", "only the first 5,000"),
        ("苹果", "苹果<script>alert(1)</script>好吃 | a\n我的苹果<b>手机</b> | b", None, None),
    ],
)
def test_bad_input_with_gpt_selected(fakes, word, text, kind, needle):
    at = _run(lang="en", models="gpt")
    at.text_input(key="tt_word").set_value(word)
    at.text_area(key="tt_text").set_value(text).run()
    assert not at.exception
    if needle:
        assert needle.replace(".", "") in _texts(at, kind).replace("\\", "").replace(".", ""), _texts(at, kind)
    for chart in at.get("plotly_chart"):
        assert "<script>" not in chart.proto.spec and "<b>手机" not in chart.proto.spec


def _shown_layer(at, m):
    """The option the browser shows in `m`'s layer select: the value the script sets (set_value), else, for a select
    drawn afresh (the run before did not draw it), its first option: the browser has no value of its own for it."""
    p = at.selectbox(key=f"tt_layer_{m}").proto
    return p.raw_value if p.set_value else p.options[p.default]


def test_layer_pickers_match_the_plots_after_an_input_error(fakes):
    """Issue #13, item 1: an input error hides the pickers for a run; when they come back they must show the layer the
    maps use (it was '0: embeddings' in the select while the maps showed the top layer)."""
    at = _run(lang="en", models="elmo,bert")
    at.text_area(key="tt_text").set_value("香蕉很甜\n梨很脆").run()  # the word is missing: an error, no pickers
    assert at.error and not at.get("plotly_chart")
    at.text_input(key="tt_word").set_value("香蕉").run()
    assert not at.exception and not at.error
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")[:4:2]]
    assert titles == ["elmo · layer 2", "bert · layer 3"]
    assert [_shown_layer(at, m) for m in ("elmo", "bert")] == ["2: layer 2", "3: layer 3"]
    at.selectbox(key="tt_layer_elmo").set_value(1).run()  # the teacher's choice survives the next error, too
    at.text_input(key="tt_word").set_value("苹果").run()
    at.text_input(key="tt_word").set_value("香蕉").run()
    assert json.loads(at.get("plotly_chart")[0].proto.spec)["layout"]["title"]["text"] == "elmo · layer 1"
    assert _shown_layer(at, "elmo") == "1: layer 1" and at.query_params["layers"] in (
        "elmo:1,bert:3",
        ["elmo:1,bert:3"],
    )


def test_layer_of_a_model_whose_data_failed_is_kept(fakes, monkeypatch):
    """A model whose data fails for a run keeps its layer in ?layers= and in its select when it comes back."""
    from ctxlib.app import loaders

    at = _run(lang="en", models="elmo,bert", layers="elmo:1,bert:2")
    real = loaders.word_tokens

    def broken(m, *a, **kw):
        if m == "bert":
            raise RuntimeError("out of memory")
        return real(m, *a, **kw)

    monkeypatch.setattr(loaders, "word_tokens", broken)
    at.text_input(key="tt_word").set_value("手机").run()
    assert at.error and at.query_params["layers"] in ("elmo:1,bert:2", ["elmo:1,bert:2"])
    monkeypatch.setattr(loaders, "word_tokens", real)
    at.text_input(key="tt_word").set_value("苹果").run()
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")[:4:2]]
    assert titles == ["elmo · layer 1", "bert · layer 2"] and _shown_layer(at, "bert") == "2: layer 2"


def test_unseen_word_flagged_per_model(fakes):
    """Issue #13, item 7: word2vec says 'not in the vocabulary' and draws nothing (no all-zero vectors, no 'mean cos
    0.000'); ELMo says it builds the word from its characters; BERT and GPT name their [UNK] characters."""
    at = _run(lang="en")
    at.text_input(key="tt_word").set_value("龘靐")
    at.text_area(key="tt_text").set_value("龘靐真好吃 | a\n我爱龘靐 | a\n龘靐手机 | b\n新的龘靐 | b").run()
    assert not at.exception and not at.error
    warnings = _texts(at, "warning").replace("\\", "")
    assert "word2vec: '龘靐' is not in the vocabulary" in warnings
    assert (
        "bert: reads characters and never saw 龘 靐 in training" in warnings
        and "gpt: reads characters and never saw 龘 靐 in training" in warnings
    )
    assert "elmo: '龘靐' is built from its characters" in _texts(at, "info").replace("\\", "")
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]
    assert (
        not any(t.startswith("word2vec") for t in titles)
        and sum(t.startswith(("elmo", "bert", "gpt")) for t in titles) == 3
    )
    assert "0.000" not in _texts(at, "caption")
    acc = [tb for tb in (d.value for d in at.dataframe) if tb.columns.tolist() == ["model", "layer", "accuracy"]][0]
    assert "word2vec" not in set(acc["model"])


def test_known_word_is_not_flagged(fakes):
    at = _run(lang="en")
    assert "vocabulary" not in _texts(at, "warning") and "[UNK]" not in _texts(at, "warning")
    assert "built from its characters" not in _texts(at, "info")


def test_heatmaps_share_one_colour_scale(fakes):
    at = _run(lang="en")
    heat = [
        json.loads(c.proto.spec)["data"][0]
        for c in at.get("plotly_chart")
        if json.loads(c.proto.spec)["data"][0]["type"] == "heatmap"
    ]
    assert len(heat) == 4 and len({h["zmin"] for h in heat}) == 1 and {h["zmax"] for h in heat} == {1.0}
    lows = [min(min(r) for r in h["z"]) if isinstance(h["z"], list) else None for h in heat]
    assert all(lo is None or lo >= heat[0]["zmin"] - 1e-6 for lo in lows)
    assert "share one colour scale" in _texts(at, "caption")


def test_nearest_words_come_with_their_scale(fakes):
    """Each model's column names the typical cosine of random vocabulary pairs; a table gives the whole scale, and
    its numbers are ctxlib.triple's over the words the nearest-word search uses."""
    from ctxlib import triple

    at = _open_tab(_run(lang="en", models="elmo,bert", layers="elmo:1,bert:3"), "nearest")
    at.toggle(key="tt_near_w").set_value(True).run()
    assert not at.exception
    scale = [tb for tb in (d.value for d in at.dataframe) if "random pairs: mean cos" in tb.columns][0]
    assert list(scale["model"]) == ["elmo", "bert"] and list(scale["layer"]) == ["layer 1", "layer 3"]
    words, M = fakes["bert"].type_matrix(3000)
    mean, p95 = triple.random_pair_cosines(M[:, 3])
    row = scale[scale["model"] == "bert"].iloc[0]
    assert row["random pairs: mean cos"] == pytest.approx(round(mean, 2))
    assert row["random pairs: 95% below"] == pytest.approx(round(p95, 2))
    assert row["a word's nearest neighbour: typical cos"] == pytest.approx(round(triple.nearest_top1(M[:, 3]), 2))
    assert f"bert (random pairs ≈ {mean:.2f})" in [c for d in [*at.dataframe, *at.table] for c in d.value.columns]
    assert "How to read these cosines" in _texts(at, "caption")


def test_elmo_halves(fakes):
    """?half=forward: ELMo's map and heatmap show its forward half (the titles say so); a sentence that opens with the
    word is named (its point sits on the type vector); the choice is kept in the URL; a bad ?half= gets a notice."""
    at = _run(lang="en", models="elmo,bert", half="forward", word="苹果", s="苹果真好吃\n我吃苹果\n这个苹果很甜")
    assert at.radio(key="tt_half_w").value == 1  # forward
    titles = [
        json.loads(c.proto.spec)["layout"]["title"]["text"].replace("<br>", " · ") for c in at.get("plotly_chart")[:4:2]
    ]
    assert titles == ["elmo · layer 2 · forward half", "bert · layer 3"]  # (a long title wraps at its " · ")
    assert "Sentence 1 opens with the word" in _texts(at, "caption")
    at.radio(key="tt_half_w").set_value(2).run()
    assert "Sentence 2 ends with the word" in _texts(at, "caption") and at.query_params["half"] in (
        "backward",
        ["backward"],
    )
    at.radio(key="tt_half_w").set_value(0).run()
    assert json.loads(at.get("plotly_chart")[0].proto.spec)["layout"]["title"]["text"] == "elmo · layer 2"
    bad = _run(lang="en", half="<b>sideways</b>")
    assert bad.radio(key="tt_half_w").value == 0 and "sideways" in _texts(bad, "caption")
    assert "tt_half_w" not in [r.key for r in _run(lang="en", models="bert").radio]  # no ELMo, no choice


def test_sentences_at_chance_say_why(fakes, monkeypatch):
    """Issue #13.8: a teacher's sentences whose labels no layer separates: the warning names the chance rate, the
    smallest label, the word's counts in the training corpus, and a fix."""
    from ctxlib import corpus

    monkeypatch.setattr(
        corpus,
        "word_table",
        lambda w: [{"source": "pd", "sense": None, "train": 7}, {"source": "reviews", "sense": None, "train": 1}],
    )
    text = "\n".join(f"苹果很好吃。 | {lab}" for lab in ("甲", "乙", "甲", "乙"))  # the same context: no layer can tell
    at = _run(lang="en", word="苹果", s=text)
    warn = " ".join(w.value for w in at.warning).replace("\\", "")  # markdown escapes off
    assert "sit at chance" in warn and "0.50" in warn
    assert "has only 2" in warn and "7 times in the People" in warn and "1 times in the reviews" in warn
    at = _run(lang="en")  # the 苹果 example set: separated, no such warning
    assert "sit at chance" not in " ".join(w.value for w in at.warning)


# -- issue #17: what the page shows, against an independent computation ---------------------------------------------


def _map_points(spec) -> tuple[np.ndarray, dict[str, tuple[float, float]]]:
    """(type point, {hover text: token point}) of a map's plotly spec (the marker traces; the star is the last one)."""

    def xy(tr):
        return list(zip(_xs(tr), _xs({"x": tr["y"]})))

    star = np.array(xy(spec["data"][-1])[0])
    pts = {h: p for tr in spec["data"][1:-1] for h, p in zip(tr["text"], xy(tr))}
    return star, pts


def _layer_rows(enc, word, texts, j):
    """Row 0: the word alone, rows 1..: the word in each text, at layer j, read straight off the encoder's tokens
    (word-level fakes: the word is one token), not through ctxlib.explore."""
    rows = [enc.encode([word])[0].layers[j, 0]]
    for t in texts:
        e = enc.encode([t], target=word)[0]
        rows.append(e.layers[j, e.tokens.index(word)])
    return np.array(rows, dtype=np.float64)


def _pca2(X):
    """Independent PCA of unit rows: centre, SVD, first two components scaled by their singular values."""
    X = X / np.linalg.norm(X, axis=1, keepdims=True)
    U, S, _ = np.linalg.svd(X - X.mean(0), full_matrices=False)
    return U[:, :2] * S[:2]


def _same_up_to_axis_signs(A, B, tol=1e-4):
    return all(min(np.abs(A[:, k] - B[:, k]).max(), np.abs(A[:, k] + B[:, k]).max()) < tol for k in range(2))


TT_TEXTS = ["我吃苹果", "苹果手机很好用", "他买了新的苹果电脑", "苹果很好吃"]


def _shown_xy(at, texts, chart=0):
    star, pts = _map_points(json.loads(at.get("plotly_chart")[chart].proto.spec))
    by_text = {}
    for h, p in pts.items():
        plain = h.replace("【", "").replace("】", "").replace("<b>", "").replace("</b>", "")
        by_text[[t for t in texts if t in plain or plain in t][0]] = p
    return np.array([star] + [by_text[t] for t in texts])


def test_map_plots_the_pca_of_the_layer_named_in_the_url(fakes):
    """?layers=elmo:1 and ?proj=pca: ELMo's map shows exactly the 2-D PCA of layer 1's unit vectors (the word alone
    and its tokens), up to the sign of each axis; layer 2's PCA (the default top layer) is something else."""
    at = _run(lang="en", models="elmo", layers="elmo:1", proj="pca", word="苹果", s="\n".join(TT_TEXTS))
    shown = _shown_xy(at, TT_TEXTS)
    want = {j: _pca2(_layer_rows(fakes["elmo"], "苹果", TT_TEXTS, j)) for j in (1, 2)}
    assert _same_up_to_axis_signs(shown, want[1])
    assert not _same_up_to_axis_signs(want[1], want[2])  # the test can tell the layers apart
    at.selectbox(key="tt_layer_elmo").set_value(2).run()
    assert _same_up_to_axis_signs(_shown_xy(at, TT_TEXTS), want[2])


def test_map_follows_the_projection_choice(fakes):
    """Choosing t-SNE replaces the PCA coordinates by a t-SNE of the same vectors (ctxlib.projection.tsne, seed 0,
    of the raw layer vectors)."""
    from ctxlib import projection

    at = _run(lang="en", models="elmo", layers="elmo:2", word="苹果", s="\n".join(TT_TEXTS))
    X = _layer_rows(fakes["elmo"], "苹果", TT_TEXTS, 2)
    pca = _shown_xy(at, TT_TEXTS)
    assert _same_up_to_axis_signs(pca, _pca2(X))
    at.radio(key="tt_proj_w").set_value("tsne").run()
    assert at.query_params["proj"] in ("tsne", ["tsne"])
    shown = _shown_xy(at, TT_TEXTS)
    assert np.allclose(shown, projection.tsne(X, seed=0), atol=1e-3)
    assert not _same_up_to_axis_signs(shown, pca)


def _loo_centroid(X, y):
    """Leave-one-out nearest centroid by cosine, written out plainly: the accuracy the page must show."""
    X = X / np.linalg.norm(X, axis=1, keepdims=True)
    y = np.array(y)
    right = 0
    for i in range(len(X)):
        rest = np.arange(len(X)) != i
        sims = {}
        for c in set(y):
            C = X[rest & (y == c)].mean(0)
            sims[c] = float(C @ X[i] / np.linalg.norm(C))
        right += max(sims, key=sims.get) == y[i]
    return right / len(X)


def test_sense_accuracy_matches_a_leave_one_out_centroid_computation(fakes):
    """The accuracy table equals an independent leave-one-out centroid classifier on the same token vectors and the
    sentences' labels, layer by layer; labels that are wrong (each pair swapped) give other numbers."""
    texts = ["我吃苹果", "苹果手机很好用", "苹果很好吃", "新鲜的苹果", "他买了苹果电脑", "苹果公司发展", "苹果是水果"]
    labels = ["水果", "品牌", "水果", "水果", "品牌", "品牌", "水果"]
    at = _run(lang="en", models="elmo", word="苹果", s="\n".join(f"{t} | {lab}" for t, lab in zip(texts, labels)))
    table = [tb for tb in (d.value for d in at.dataframe) if tb.columns.tolist() == ["model", "layer", "accuracy"]][0]
    shown = list(table["accuracy"])
    # Layer 0 of the fake is one vector per type: every leave-one-out comparison there is an exact tie, decided by
    # float rounding (which differs with BLAS threads), so the comparison is made on the contextual layers.
    rows = [_layer_rows(fakes["elmo"], "苹果", texts, j)[1:] for j in range(1, 3)]
    want = [round(_loo_centroid(X, labels), 3) for X in rows]
    assert shown[1:] == pytest.approx(want, abs=1e-9)
    for wrong in (labels[::-1], [{"水果": "品牌", "品牌": "水果"}[lab] for lab in labels][::-1]):
        assert want != [round(_loo_centroid(X, wrong), 3) for X in rows]  # the check can tell wrong labels


def test_typed_word_and_sentences_go_into_the_url(fakes):
    """A teacher's own word and sentences are written to ?word= and ?s= (the link reopens them); going back to an
    example set removes them again."""
    at = _run(lang="en")
    text = "他打电话 | a\n我打篮球 | b\n你打电话 | a\n她打排球 | b"
    at.text_input(key="tt_word").set_value("打")
    at.text_area(key="tt_text").set_value(text).run()
    qp = {k: at.query_params[k] for k in at.query_params}
    one = {k: v[0] if isinstance(v, list) else v for k, v in qp.items()}
    assert one["word"] == "打" and one["s"] == text
    again = _run(lang="en", **{k: v for k, v in one.items() if k in ("word", "s", "set", "proj", "models")})
    assert again.text_input(key="tt_word").value == "打" and again.text_area(key="tt_text").value == text
    at.selectbox(key="tt_set").set_value("活动").run()
    assert "word" not in at.query_params and "s" not in at.query_params


def test_switching_the_language_keeps_the_example_set_shown(monkeypatch):
    """The browser keeps a selectbox's value as its label: after a language switch the page sends the label of the
    chosen example set in the new language (else the box shows nothing selected)."""
    app_fakes.install(monkeypatch)
    at = _run(lang="en")
    third = list(EXAMPLE_SETS)[2]
    at.selectbox(key="tt_set").set_value(third).run()
    at.radio(key="ctxlab_lang_radio").set_value("中文").run()
    box = at.selectbox(key="tt_set")
    assert not at.exception and box.value == third
    assert box.proto.set_value and box.proto.raw_value in box.proto.options and "：" in box.proto.raw_value


def test_only_the_open_tab_runs(fakes):
    """A class reloading the page draws one tab: the sense accuracy (the first), not the nearest words, the
    segmentation or the CSV; each of those appears when its tab is opened, and the accuracy goes."""
    at = _run(lang="en")
    acc = lambda at: [d for d in at.dataframe if d.value.columns.tolist() == ["model", "layer", "accuracy"]]  # noqa: E731
    assert acc(at) and not at.get("download_button") and not [t for t in at.toggle if t.key == "tt_near_w"]
    assert not [d for d in at.dataframe if "bert: pooled characters" in d.value.columns]
    _open_tab(at, "segmentation")
    assert [d for d in at.dataframe if "bert: pooled characters" in d.value.columns] and not acc(at)
    seg_tab = at.tabs[2]  # the table is drawn inside its tab, under the tab's caption
    assert [d for d in seg_tab.dataframe if "bert: pooled characters" in d.value.columns] and seg_tab.caption
    _open_tab(at, "export")
    assert len(at.get("download_button")) == 1 and not at.dataframe
    _open_tab(at, "nearest")
    assert at.toggle(key="tt_near_w").value is False and not at.get("download_button")
    _open_tab(at, "accuracy")
    assert acc(at)


@pytest.mark.parametrize("near", ["1", "0", "nosuch"])
def test_a_link_with_near_opens_the_nearest_words(fakes, near):
    at = _run(lang="en", near=near)
    from ctxlib.app.i18n import lookup

    assert at.session_state["tt_tab"] == lookup("type_token.tabs.nearest", "en")
    assert at.toggle(key="tt_near_w").value is (near == "1")
    said = " ".join(e.value for kind in ("caption", "info", "warning") for e in getattr(at, kind)).replace("\\", "")
    assert ("The link's near=nosuch is not" in said) == (near == "nosuch"), said

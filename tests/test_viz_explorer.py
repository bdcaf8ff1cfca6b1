"""Plot builders and projections, tested without streamlit."""

import json

import numpy as np
import pytest

from ctxlib.projection import cluster_top_words, kmeans, pca, project
from ctxlib.viz import explorer as plots
from ctxlib.viz.margin import margin_chart


def test_mark_word_brackets_escapes_and_shortens():
    assert plots.mark_word("苹果真好吃", 0, 2) == "【苹果】真好吃"
    s = plots.mark_word("<script>alert(1)</script>苹果", 25, 27)
    assert "<script>" not in s and "&lt;script&gt;" in s and "【苹果】" in s
    long = "啊" * 500 + "苹果" + "哦" * 500
    m = plots.mark_word(long, 500, 502, max_len=60, width=1000)
    assert "【苹果】" in m and m.startswith("…") and m.endswith("…") and len(m) <= 66
    assert plots.mark_word("abcdef", 2, 3, width=3).count("<br>") == 2  # wrapped


def test_type_token_map_traces():
    coords = np.array([[0, 0], [1, 1], [2, 0], [0, 2]], float)
    fig = plots.type_token_map(coords, ["a", "b", "c"], labels=["x", "y", "x"], title="t")
    names = [tr.name for tr in fig.data]
    assert "x" in names and "y" in names and "type" in names
    lines = fig.data[0]
    assert list(lines.x) == [0, 1, None, 0, 2, None, 0, 0, None]  # type point to each token
    star = [tr for tr in fig.data if tr.name == "type"][0]
    assert star.marker.symbol == "star" and list(star.x) == [0]
    x_trace = [tr for tr in fig.data if tr.name == "x"][0]
    assert list(x_trace.text) == ["a", "c"]
    with pytest.raises(ValueError):
        plots.type_token_map(coords, ["a"])


def test_user_text_never_reaches_plotly_unescaped():
    evil = "<script>alert(1)</script>"
    fig = plots.type_token_map(np.zeros((2, 2)), [plots.mark_word(evil, 0, 1)], labels=[evil], title=evil)
    spec = fig.to_json()
    assert "<script>" not in spec and "\\u003cscript" not in spec.lower()
    fig = plots.similarity_heatmap(np.eye(2), [evil, "b"])
    assert "<script>" not in json.dumps(fig.to_plotly_json(), default=str)


def test_similarity_heatmap():
    S = np.array([[1, 0.5], [0.5, 1]])
    fig = plots.similarity_heatmap(S, ["苹果真好吃", "苹果手机很好用"])
    assert fig.data[0].z.shape == (2, 2) and fig.data[0].zmax == 1.0
    assert list(fig.data[0].x) == ["1", "2"]
    fig = plots.similarity_heatmap(S, ["a", "b"], labels=["水果", "品牌"])
    assert list(fig.data[0].y) == ["1 水果", "2 品牌"] and "1. a" in fig.data[0].customdata[0][1]
    with pytest.raises(ValueError):
        plots.similarity_heatmap(np.eye(3), ["a", "b"])


def test_line_charts_and_bars():
    fig = plots.layer_accuracy_chart(
        {"elmo": (["l0", "l1", "l2"], [0.5, 0.8, 0.9]), "bert": (["e", "1"], [0.6, 1.0])}, chance=0.5
    )
    assert [tr.name for tr in fig.data] == ["elmo", "bert"] and list(fig.data[0].y) == [0.5, 0.8, 0.9]
    fig = plots.self_similarity_chart({"bert": (["e", "1"], [0.9, 0.5], [0.3, 0.2])})
    assert len(fig.data) == 2 + 2 and fig.data[1].line.dash == "dot"  # two lines and the two line-style keys
    rows = [
        {"model": "word2vec", "label": "type", "margin": 0.0, "cos_ab": 1.0, "cos_ac": 1.0, "rank": 0.5},
        {"model": "elmo", "label": "l1", "margin": 0.2, "cos_ab": 0.9, "cos_ac": 0.7, "rank": 0.6},
        {"model": "elmo", "label": "<b>l2</b>", "margin": -0.1, "cos_ab": 0.5, "cos_ac": 0.6, "rank": None},
    ]
    fig = margin_chart(rows)
    marks = [tr for tr in fig.data if tr.type == "scatter" and tr.mode == "markers+text"]
    assert [tr.name for tr in marks] == ["word2vec", "elmo"] and list(marks[1].x) == [0.2, -0.1]
    assert (
        list(marks[1].text) == ["+0.200", "-0.100"] and list(marks[1].marker.color)[1] == "white"
    )  # hollow: wrong way
    bars = [tr for tr in fig.data if tr.type == "bar"]
    assert [list(b.x) for b in bars] == [[0.5], [0.6]]  # a row without a held-out figure gets no bar
    assert list(fig.layout.xaxis.range) == pytest.approx([-0.27, 0.27]) and list(fig.layout.xaxis2.range) == [
        0,
        1.12,
    ]  # one scale
    assert "<b>l2</b>" not in fig.to_json()


def test_self_similarity_chart_with_four_models_reads_well():
    """One legend entry per model (both its lines in one group) plus a key to the two line styles; fixed colours."""
    curves = {
        "word2vec": (["type vector"], [1.0], [0.2]),
        "elmo": (["x", "1", "2"], [1, 0.7, 0.5], [0.3, 0.3, 0.4]),
        "bert": (["e", "1", "2"], [0.9, 0.6, 0.4], [0.3, 0.2, 0.2]),
        "gpt": (["e", "1", "2", "3"], [0.9, 0.8, 0.7, 0.6], [0.5] * 4),
    }
    fig = plots.self_similarity_chart(curves, self_name="self-similarity", base_name="baseline")
    legend = [tr.name for tr in fig.data if tr.showlegend is not False]
    assert legend == ["word2vec", "elmo", "bert", "gpt", "self-similarity", "baseline"]
    gpt = [tr for tr in fig.data if tr.legendgroup == "gpt"]
    assert [tr.line.dash for tr in gpt] == ["solid", "dot"] and list(gpt[0].y) == [0.9, 0.8, 0.7, 0.6]
    assert {tr.line.color for tr in gpt} == {plots.MODEL_COLOURS["gpt"]}
    assert "baseline" in gpt[1].hovertemplate and "gpt" in gpt[1].hovertemplate
    # a model keeps its colour whichever models are shown, and in every chart
    alone = plots.self_similarity_chart({"gpt": curves["gpt"]})
    assert alone.data[0].line.color == plots.MODEL_COLOURS["gpt"]
    acc = plots.layer_accuracy_chart({"gpt": (["e", "1"], [0.5, 0.9]), "elmo": (["x", "1"], [0.6, 0.7])})
    assert [tr.marker.color for tr in acc.data] == [plots.MODEL_COLOURS["gpt"], plots.MODEL_COLOURS["elmo"]]
    bars = margin_chart(
        [
            {"model": m, "label": "layer 1", "margin": 0.1, "cos_ab": 0.9, "cos_ac": 0.8, "rank": 0.6}
            for m in ("gpt", "bert")
        ]
    )
    assert [tr.marker.color for tr in bars.data if tr.type == "bar"] == [
        plots.MODEL_COLOURS["gpt"],
        plots.MODEL_COLOURS["bert"],
    ]
    assert plots.model_colour("other", 0) not in plots.MODEL_COLOURS.values()
    spec = plots.self_similarity_chart({"<b>x</b>": (["<i>"], [1.0], [0.5])}).to_json()
    assert "<b>x</b>" not in spec and "<i>" not in spec  # model and layer names are escaped


def test_type_token_map_title_wraps_in_narrow_columns():
    xy = np.array([[0, 0], [1, 1]], float)
    fig = plots.type_token_map(xy, ["a"], title="word2vec · type vector (word2vec)")
    assert fig.layout.title.text == "word2vec<br>type vector (word2vec)"
    short = plots.type_token_map(xy, ["a"], title="gpt · <b>2</b>")
    assert short.layout.title.text == "gpt · &lt;b&gt;2&lt;/b&gt;" and short.layout.margin.t == fig.layout.margin.t
    assert (
        "<i>" not in plots.type_token_map(xy, ["a"], title="a very long title of a model · <i>x</i>").layout.title.text
    )


def test_atlas_map_with_cluster_words():
    xy = np.array([[0, 0], [0, 1], [5, 5], [5, 6]], float)
    fig = plots.atlas_map(xy, list("abcd"), ["C1", "C1", "C2", "C2"], cluster_words={"C1": ["经济"], "C2": ["文艺"]})
    assert len(fig.data) == 2 and len(fig.layout.annotations) == 2
    texts = sorted(a.text for a in fig.layout.annotations)
    assert "经济" in texts[0] or "经济" in texts[1]
    centres = {a.text: (a.x, a.y) for a in fig.layout.annotations}
    assert (0, 0.5) in centres.values() and (5, 5.5) in centres.values()  # the median of two points is their mean


def test_pca_matches_svd_and_handles_degenerate_input():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, 5)) * np.array([5, 2, 1, 0.1, 0.1])
    P = pca(X)
    assert P.shape == (20, 2)
    assert abs(np.var(P[:, 0]) - np.linalg.svd(X - X.mean(0), compute_uv=False)[0] ** 2 / 20) < 1e-6
    assert np.allclose(pca(X), pca(X))  # deterministic signs
    assert np.all(pca(np.ones((4, 3))) == 0)  # word2vec: all tokens identical
    assert pca(np.ones((1, 3))).shape == (1, 2)
    with pytest.raises(ValueError):
        project(X, "lda")
    with pytest.raises(ValueError):
        project(np.array([[np.nan, 1.0], [1.0, 2.0]]))


def test_tsne_separates_two_groups():
    rng = np.random.default_rng(1)
    X = np.vstack([rng.normal(0, 0.1, (8, 6)) + 3, rng.normal(0, 0.1, (8, 6)) - 3])
    X[:, 0] += np.r_[np.zeros(8), np.ones(8)] * 10
    P = project(X, "tsne")
    assert P.shape == (16, 2)
    a, b = P[:8].mean(0), P[8:].mean(0)
    spread = max(np.linalg.norm(P[:8] - a, axis=1).max(), np.linalg.norm(P[8:] - b, axis=1).max())
    assert np.linalg.norm(a - b) > spread
    assert np.all(project(np.ones((6, 3)), "tsne") == 0)


def test_kmeans_finds_the_groups():
    rng = np.random.default_rng(2)
    A = rng.normal(0, 0.05, (10, 4)) + np.array([1, 0, 0, 0])
    B = rng.normal(0, 0.05, (6, 4)) + np.array([0, 1, 0, 0])
    c = kmeans(np.vstack([A, B]), 2)
    assert len(set(c[:10])) == 1 and len(set(c[10:])) == 1 and c[0] != c[10]
    assert c[0] == 0  # largest cluster first
    assert len(set(kmeans(np.vstack([A, B]), 50))) <= 16
    assert np.all(kmeans(A, 1) == 0)


def test_cluster_top_words_prefers_typical_words():
    contexts = [
        ["经济", "的", "快"],
        ["经济", "社会"],
        ["经济", "的"],
        ["文艺", "的"],
        ["文艺", "丰富", "的"],
        ["文艺", "经济"],
    ]
    words = cluster_top_words(contexts, [0, 0, 0, 1, 1, 1], topn=2)
    assert words[0][0] == "经济" and words[1][0] == "文艺"
    assert "的" not in words[0] + words[1]
    with pytest.raises(ValueError):
        cluster_top_words(contexts, [0, 1])


def test_type_token_map_marks_coinciding_tokens():
    fig = plots.type_token_map(np.zeros((5, 2)), list("abcd"))
    assert [a.text for a in fig.layout.annotations] == ["×4"]
    fig = plots.type_token_map(np.array([[0, 0], [1, 0], [0, 1]], float), ["a", "b"])
    assert not fig.layout.annotations


def test_project_pca_sees_directions_not_lengths():
    X = np.array([[1.0, 0.0], [10.0, 0.0], [0.0, 1.0], [0.0, 5.0]])
    P = project(X, "pca")
    assert np.allclose(P[0], P[1]) and np.allclose(P[2], P[3]) and not np.allclose(P[0], P[2])
    assert not np.allclose(project(X, "pca", normalize=False)[0], project(X, "pca", normalize=False)[1])
    assert np.all(project(np.zeros((3, 4)), "pca") == 0)


def test_unvalidated_builders_make_figures_plotly_accepts():
    """The figures built without validation (explorer.spec_figure) pass it, and read as plotly validates them."""
    import plotly.graph_objects as go

    rows = [
        {
            "model": m,
            "label": f"layer {j}",
            "margin": 0.1 * j - 0.05,
            "cos_ab": 0.5,
            "cos_ac": 0.4,
            "rank": 0.6 if j else None,
        }
        for m, n in (("word2vec", 1), ("elmo", 3), ("mine", 2))
        for j in range(n)
    ]
    S = np.array([[1.0, 0.2, 0.5], [0.2, 1.0, 0.1], [0.5, 0.1, 1.0]])
    figs = [
        margin_chart(rows, title="苹果 · <b>"),
        plots.layer_accuracy_chart({"elmo": (["a", "b"], [0.5, 0.7]), "bert": (["c"], [0.1])}, 0.55),
        plots.layer_accuracy_chart({"elmo": (["a"], [0.5])}),
        plots.type_token_map(np.arange(8.0).reshape(4, 2), ["a", "b", "c"], ["x", "y", "x"], title="t"),
        plots.similarity_heatmap(S, ["a", "b", "c"], labels=["x", "y", "x"]),
    ]
    for fig in figs:
        spec = fig.to_dict()
        checked = go.Figure(spec).to_dict()  # raises on a property plotly does not know, or a bad value
        assert len(checked["data"]) == len(spec["data"])
        assert {k for k in spec["layout"] if k != "template"} <= set(checked["layout"])
    margin = figs[0]
    assert [t.xaxis for t in margin.data[:3]] == ["x", "x", "x2"] and margin.layout.yaxis2.matches == "y"
    assert list(margin.layout.yaxis.categoryarray)[-1] == "word2vec · layer 0"
    assert figs[1].layout.shapes[0].y0 == 0.55 and figs[1].layout.annotations[0].text == "majority 0.55"
    assert "shapes" not in figs[2].to_dict()["layout"]


def test_spec_figure_is_its_dict_until_used_as_a_figure():
    """SpecFigure's to_dict() is the builder's dicts + Plotly's default template, without building Plotly objects;
    any other use builds the real figure, and changes after that show in to_dict()."""
    import pickle

    import plotly.graph_objects as go
    import plotly.io as pio

    from ctxlib.viz.common import SpecFigure, default_template

    data = [{"type": "bar", "x": ["a", "b"], "y": [1.0, 2.0]}, {"x": [1, 2], "y": [3, 4], "mode": "markers"}]
    layout = {"title": {"text": "t"}, "height": 300}
    fig = SpecFigure(data, layout)
    d = fig.to_dict()
    assert not fig._ctxlab_built
    want = go.Figure(data=data, layout=layout).to_dict()
    assert (
        d["data"][1]["type"] == "scatter"
        and d["layout"]["template"] == default_template() == want["layout"]["template"]
    )
    assert json.loads(pio.to_json(d, validate=False)) == json.loads(pio.to_json(want, validate=False))
    assert isinstance(fig, go.Figure) and fig.layout.title.text == "t" and len(fig.data) == 2 and fig._ctxlab_built
    fig.update_layout(height=500)
    assert fig.to_dict()["layout"]["height"] == 500
    back = pickle.loads(pickle.dumps(SpecFigure(data, layout)))
    assert type(back) is go.Figure and back.to_dict()["layout"]["height"] == 300
    go.Figure(SpecFigure(data, layout).to_dict())  # valid for Plotly's validation

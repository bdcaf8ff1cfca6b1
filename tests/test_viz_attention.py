"""Plot builders for the BERT pages, tested without streamlit on hand-made attention matrices."""

import numpy as np
import pytest

from ctxlib.viz import attention as va
from ctxlib.viz import attention_stats as vs
from ctxlib.viz import head_view as hv

TOKENS = ["[CLS]", "苹", "果", "很", "甜", "[SEP]"]


def _att(rng=np.random.default_rng(0), L=2, H=3, T=6):
    a = rng.random((L, H, T, T)).astype(np.float32)
    return a / a.sum(-1, keepdims=True)


def test_renormalize_rows_sum_to_one_and_drop_specials():
    a = _att()
    keep = vs.keep_indices(TOKENS, hide_specials=True)
    assert keep == [1, 2, 3, 4]
    r = vs.renormalize(a, keep)
    assert r.shape == (2, 3, 4, 4)
    np.testing.assert_allclose(r.sum(-1), 1.0, atol=1e-5)
    # ratios inside a row are preserved
    np.testing.assert_allclose(r[0, 0, 0, 1] / r[0, 0, 0, 0], a[0, 0, 1, 2] / a[0, 0, 1, 1], rtol=1e-5)
    assert vs.keep_indices(TOKENS, hide_specials=False) == list(range(6))
    assert vs.keep_indices(["[CLS]", "[SEP]"], True) == [0, 1]  # never empty


def test_renormalize_zero_row_becomes_uniform():
    a = np.zeros((1, 1, 3, 3), np.float32)
    a[0, 0, :, 0] = 1.0  # everything on token 0, which is dropped
    r = vs.renormalize(a, [1, 2])
    np.testing.assert_allclose(r[0, 0], 0.5)


def test_head_summaries_on_hand_made_heads():
    T = len(TOKENS)
    prev = np.zeros((T, T))
    for i in range(T):
        prev[i, max(i - 1, 0)] = 1.0
    sep = np.zeros((T, T))
    sep[:, T - 1] = 1.0
    uniform = np.full((T, T), 1.0 / T)
    nxt = np.zeros((T, T))
    for i in range(T):
        nxt[i, min(i + 1, T - 1)] = 1.0
    att = np.stack([np.stack([prev, sep]), np.stack([uniform, nxt])])  # (2, 2, T, T)
    rows = {(r["layer"], r["head"]): r for r in vs.head_summaries(att, TOKENS)}
    assert rows[(1, 1)]["kind"] == "previous char"
    # 果, 很, 甜 attend to their previous char; 苹's previous token is [CLS], which counts as the [CLS] share
    assert rows[(1, 1)]["prev"] == pytest.approx(0.75) and rows[(1, 1)]["cls"] == pytest.approx(0.25)
    for r in rows.values():  # shares of one distribution over the same rows never add up to more than 1
        assert r["prev"] + r["next"] + r["self"] + r["cls"] + r["sep"] <= 1.0 + 1e-9
    assert rows[(1, 1)]["entropy"] == pytest.approx(0.0)
    assert rows[(1, 2)]["kind"] == "[SEP]" and rows[(1, 2)]["sep"] == pytest.approx(1.0)
    assert rows[(2, 1)]["entropy"] == pytest.approx(np.log2(T)) and rows[(2, 1)]["kind"] == "broad"
    assert rows[(2, 1)]["cls"] == pytest.approx(1.0 / T)
    assert rows[(2, 2)]["kind"] == "next char"


def test_visible_hides_specials_and_keeps_segments():
    a = _att()
    att, toks, seg, keep = vs.visible(a, TOKENS, [0, 0, 0, 1, 1, 1], True)
    assert toks == TOKENS[1:5] and seg == [0, 0, 1, 1] and keep == [1, 2, 3, 4]
    np.testing.assert_allclose(att, vs.renormalize(a, keep))
    att, toks, seg, keep = vs.visible(a, TOKENS, None, False)
    assert att is a and toks == TOKENS and seg is None and keep == list(range(6))


def test_page_helpers():
    a = _att()
    np.testing.assert_allclose(vs.mean_heads(a[0], [1, 3]), a[0, [0, 2]].mean(0))
    np.testing.assert_allclose(vs.mean_heads(a[0], []), a[0].mean(0))
    wa = np.array([[0.2, 0.3, 0.5], [0.0, 0.0, 1.0]])
    np.testing.assert_allclose(vs.keep_columns(wa, [0, 1]), [[0.4, 0.6], [0.0, 0.0]])
    assert va.parse_selection("3,2", (4, 1)) == (3, 2)
    for bad in ("", "0,2", "3", "a,b", "1,2,3"):
        assert va.parse_selection(bad, (4, 1)) == (4, 1)
    assert va.clamp_selection((99, 2), 4, 3) == (4, 2)
    assert va.clicked_head({"selection": {"points": [{"customdata": [2, 3]}]}}) == (2, 3)
    assert va.clicked_head(None) is None and va.clicked_head({"selection": {"points": []}}) is None
    rows = vs.head_summaries(a, TOKENS)
    table = vs.summary_table(rows, {"entropy": "H", "sep": "S"}, ("L", "h", "k"))
    assert list(table[0]) == ["L", "h", "k", "H", "S"] and table[0]["H"] == round(rows[0]["entropy"], 3)
    assert len(table) == 2 * 3 and set(vs.METRICS) <= set(rows[0])


def test_word_attention_and_drift():
    a = _att()
    wa = vs.word_attention(a, [1, 2])
    assert wa.shape == (2, 6)
    np.testing.assert_allclose(wa.sum(1), 1.0, atol=1e-5)
    np.testing.assert_allclose(wa[0], a[0, :, [1, 2], :].mean(axis=(0, 1)), atol=1e-6)
    layers = np.zeros((3, 6, 4), np.float32)
    layers[0, 1:3] = [1, 0, 0, 0]
    layers[1, 1:3] = [1, 1, 0, 0]
    layers[2, 1:3] = [0, 1, 0, 0]
    cos = vs.drift_from_layer0(layers, [1, 2])
    np.testing.assert_allclose(cos, [1.0, np.sqrt(0.5), 0.0], atol=1e-6)


def test_word_token_indices_skip_specials_and_find_first():
    spans = [(0, 0), (0, 1), (1, 2), (2, 3), (3, 4), (4, 4)]
    assert vs.word_token_indices(spans, TOKENS, "苹果很甜", "苹果") == [1, 2]
    assert vs.word_token_indices(spans, TOKENS, "苹果很甜", "香蕉") == []
    assert vs.word_token_indices(spans, TOKENS, "苹果很甜", "") == []


def test_head_view_escapes_tokens_and_loads_nothing_external():
    toks = ["[CLS]", "<script>alert(1)</script>", "&", '"x"', "[SEP]"]
    att = _att(L=1, H=2, T=5)[0]
    page = hv.head_view_html(att, toks, [0, 1], threshold=0.0)
    assert "<script>alert" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert page.count("<script>") == 1  # only our own inline script
    for bad in ("http://", "https://", "src=", "cdn", "@import"):
        assert bad not in page.lower()
    assert page.count('class="ln"') == 2 * 5 * 5  # threshold 0: every pair for both heads
    assert hv.head_view_html(att, toks, [0], threshold=0.99).count('class="ln"') <= 5
    assert "■ head 1" in page and ">from</text>" in page  # English by default
    zh = hv.head_view_html(att, toks, [1], labels=hv.HeadViewLabels("头 {n}", "<提示>", "发出", "被注意"))
    assert "■ 头 2" in zh and "&lt;提示&gt;" in zh and ">发出</text>" in zh and ">被注意</text>" in zh


def test_plotly_figures_escape_and_shape():
    toks = ["[CLS]", "<b>", "果", "果", "[SEP]"]
    a = _att(L=2, H=2, T=5)
    fig = va.model_view(a, toks, selected=(2, 1))
    assert len(fig.data[1].x) == 4  # one clickable centre per (layer, head)
    assert [list(c) for c in fig.data[1].customdata] == [[1, 1], [1, 2], [2, 1], [2, 2]]
    hm = va.attention_heatmap(a[0, 0], toks, "<i>title</i>")
    assert "&lt;b&gt;" in hm.layout.xaxis.ticktext and "<b>" not in hm.layout.xaxis.ticktext
    assert hm.layout.title.text == "&lt;i&gt;title&lt;/i&gt;"
    assert len(set(va.axis_labels(toks))) == len(toks)  # repeated 果 stays two labels
    rows = vs.head_summaries(a, toks)
    f2 = va.head_summary_figure(rows, 2, 2, "entropy")
    assert np.asarray(f2.data[0].z).shape == (2, 2)


def _causal(L=2, H=2, T=5):
    a = np.tril(np.random.default_rng(1).random((L, H, T, T)) + 0.1)
    return (a / a.sum(-1, keepdims=True)).astype(np.float32)


def test_causal_heatmaps_mark_masked_cells_not_zeros():
    a = _causal()
    toks = ["[CLS]", "今", "天", "<b>", "好"]
    fig = va.attention_heatmap(a[0, 0], toks, "t", causal=True, masked_label="masked: <no>")
    z, grey, hatch = (np.array(fig.data[0].z, dtype=float), np.array(fig.data[1].z, dtype=float), fig.data[2])
    up = np.triu_indices(5, 1)
    assert np.isnan(z[up]).all() and not np.isnan(z[np.tril_indices(5)]).any()
    assert (grey[up] == 1).all() and np.isnan(grey[np.tril_indices(5)]).all()
    assert fig.data[1].name == hatch.name == "masked" and hatch.fillpattern.shape == "/" and hatch.hoverinfo == "skip"
    assert "&lt;no&gt;" in fig.data[1].hovertemplate
    assert fig.data[0].zmax == pytest.approx(float(a[0, 0].max()))  # the scale is the learned weights'
    plain = va.attention_heatmap(a[0, 0], toks)
    assert len(plain.data) == 1 and (np.array(plain.data[0].z)[up] == 0).all()  # BERT: unchanged
    mv = va.model_view(a, toks, (1, 1), causal=True)
    assert [t.name for t in mv.data].count("masked") == 2 and mv.data[1].customdata is not None  # clicks: trace 1
    big = np.array(mv.data[0].z, dtype=float)
    assert np.isnan(big[0, 1]) and not np.isnan(big[1, 0])
    assert np.isnan(np.array(mv.data[2].z, dtype=float)[1, 0]) and mv.data[2].hoverinfo == "skip"
    xs = [x for x in mv.data[3].x]
    assert xs.count(None) == 4  # one hatched outline per tile


def test_staircase_outlines_the_upper_triangle():
    xs, ys = va._staircase(3)
    assert list(zip(xs, ys)) == [(0.5, -0.5), (2.5, -0.5), (2.5, 1.5), (1.5, 1.5), (1.5, 0.5), (0.5, 0.5), (0.5, -0.5)]
    assert va._staircase(1) == ([], [])


def test_causal_head_summaries_and_metrics():
    a = _causal(T=6)
    toks = ["[CLS]", "苹", "果", "很", "甜", "了"]
    rows = vs.head_summaries(a, toks, causal=True)
    assert all(r["next"] == 0 and r["sep"] == 0 for r in rows)
    assert rows[0]["max_entropy"] == pytest.approx(np.mean(np.log2([2, 3, 4, 5, 6])))  # row i sees i + 1 tokens
    assert vs.head_summaries(a, toks)[0]["max_entropy"] == pytest.approx(np.log2(6))
    assert (
        "next" not in vs.metrics_for(True) and "sep" not in vs.metrics_for(True) and vs.metrics_for(False) == vs.METRICS
    )
    assert va.clicked_head({"selection": {"points": [{"x": 1}, {"customdata": [2, 3]}]}}) == (2, 3)


def test_word_attention_labels_leave_the_title_alone():
    """Issue #13.8: with sentence B the token labels turn vertical; above the map they overlapped the title."""
    tokens = ["[CLS]"] + list("苹果手机很好用") + ["[SEP]"] + list("路上的行人都打着伞。") + ["[SEP]"]
    wa = np.full((4, len(tokens)), 1 / len(tokens))
    fig = va.word_attention_figure(wa, tokens, "苹果", "title")
    assert fig.layout.xaxis.side == "bottom" and fig.layout.title.text == "title"
    assert fig.layout.margin.b >= 14 + 9 * 5  # room for the vertical [SEP]
    short = va.word_attention_figure(np.full((4, 5), 0.2), ["[CLS]", "苹", "果", "好", "[SEP]"], "苹果", "t")
    assert short.layout.height < fig.layout.height


def test_head_summary_ticks_follow_the_labels():
    rows = vs.head_summaries(np.full((2, 2, 3, 3), 1 / 3), ["[CLS]", "苹", "[SEP]"])
    zh = vs.AxisLabels(**{**vs.AxisLabels()._asdict(), "head_n": "头 {n}", "layer_n": "第 {n} 层"})
    fig = va.head_summary_figure(rows, 2, 2, "entropy", labels=zh)
    assert list(fig.data[0].x) == ["头 1", "头 2"] and list(fig.data[0].y) == ["第 1 层", "第 2 层"]

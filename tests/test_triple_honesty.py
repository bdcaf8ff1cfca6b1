"""The home demo's honesty checks in the library: a target carved out of a longer jieba word (tokens.target_split,
triple.segmentations), the summary of whole layers only (triple.verdict never picks an ELMo half), the noise band
(triple.null_margins, noise_band, example_noise and its disk cache) and the verdict on both sides of the band."""

import json

import numpy as np
import pytest

from ctxlib import triple
from ctxlib.tokens import show_split, target_split
from ctxlib.triple import MarginRow, View


# -- segmentation: is the target a word of jieba's own? ----------------------------------------------------------
def test_target_cut_out_of_a_longer_word_is_flagged():
    sp = target_split("我买了新手机", "手机")
    assert sp.carved and sp.host == "新手机"
    assert show_split(sp.natural) == "我 | 买 | 了 | 新手机"  # jieba alone: 新手机 is one word
    assert show_split(sp.forced, sp.index) == "我 | 买 | 了 | 新 | 【手机】"  # what the word models read
    glued = target_split("苹果公司发布了新手机", "机")  # the left side, cut alone, turns 新手 (novice) into a word
    assert glued.carved and glued.host == "新手机" and show_split(glued.forced, glued.index).endswith("新手 | 【机】")
    default_c = target_split("苹果公司发布了新手机", "苹果")  # the demo's default C: 苹果 cut out of 苹果公司
    assert default_c.carved and default_c.host == "苹果公司" and default_c.forced[0][0] == "苹果"


def test_target_that_jieba_makes_a_word_is_not_flagged():
    sp = target_split("我每天吃一个苹果", "苹果")
    assert not sp.carved and sp.host == "苹果" and sp.natural == sp.forced
    assert show_split(sp.forced, sp.index) == "我 | 每天 | 吃 | 一个 | 【苹果】"
    assert target_split("苹果手机很好用", "苹果").carved is False
    assert target_split("我吃梨", "苹果") is None


def test_a_target_spanning_two_jieba_words_is_flagged_too():
    sp = target_split("我吃苹果", "我吃")  # 我 | 吃 in jieba: the models read one token jieba would not make
    assert sp.carved and sp.host == "我吃" and sp.forced[sp.index][0] == "我吃"


def test_segmentations_per_sentence_first_occurrence():
    got = triple.segmentations("苹果", ("我每天吃一个苹果", "这个苹果又甜又脆", "苹果公司发布了新手机"))
    assert [s.carved for s in got] == [False, False, True]
    first = triple.segmentations("手机", ["新手机和旧手机"])[0]  # the first occurrence is the one compared
    assert first.forced[first.index][1:] == (1, 3) and first.carved


# -- the summary: whole layers only ----------------------------------------------------------------------------
def _row(view, margin, ab=0.5):
    return MarginRow(view, ab, ab - margin)


def test_verdict_never_picks_a_half_even_when_a_half_has_the_largest_margin():
    rows = [
        _row(View(0), 0.0, 1.0),
        _row(View(1), -0.05),
        _row(View(1, "forward"), 0.044),
        _row(View(1, "backward"), 0.30),
        _row(View(2), -0.10),
        _row(View(2, "forward"), 0.20),
        _row(View(2, "backward"), -0.2),
    ]
    rows[0] = MarginRow(View(0), 1.0, 1.0)  # the char-CNN layer: context-free
    assert max(rows, key=lambda r: r.margin).view.half == "backward"  # a half has the largest margin of all
    v = triple.verdict(rows)
    assert v.row.view == View(1) and v.row.view.half is None and v.outcome == "other" and v.band is None
    assert [r.view for r in triple.full_rows(rows)] == [View(0), View(1), View(2)]
    v = triple.verdict(rows, {View(1): 0.02, View(1, "backward"): 0.01})
    assert v.row.view == View(1) and v.outcome == "other" and v.band == 0.02
    assert triple.verdict([MarginRow(View(0), 1.0, 1.0)]) is None  # word2vec: nothing to name


@pytest.mark.parametrize(
    "margin,band,outcome",
    [
        (0.079, 0.10, "unclear"),
        (0.13, 0.10, "same"),
        (-0.13, 0.10, "other"),
        (-0.05, 0.10, "unclear"),
        (0.10, 0.10, "unclear"),  # on the edge: inside
        (0.079, None, "same"),  # no band known: the plain sign
    ],
)
def test_verdict_on_both_sides_of_the_band(margin, band, outcome):
    rows = [_row(View(1), margin), _row(View(2), margin - 0.2), _row(View(1, "forward"), margin + 0.3)]
    bands = None if band is None else {View(1): band, View(2): band / 2, View(1, "forward"): 0.0}
    v = triple.verdict(rows, bands)
    assert (v.row.view, v.outcome) == (View(1), outcome)
    assert triple.inside_band(margin, band) == (outcome == "unclear")


# -- the noise band ----------------------------------------------------------------------------------------------
def test_null_margins_are_every_same_sense_triple():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((7, 5))
    labels = list("xxxxyyy")
    want = []
    cos = lambda a, b: float(X[a] @ X[b] / np.linalg.norm(X[a]) / np.linalg.norm(X[b]))
    for g in "xy":
        idx = [i for i, s in enumerate(labels) if s == g]
        want += [cos(a, b) - cos(a, c) for a in idx for b in idx for c in idx if len({a, b, c}) == 3]
    got = triple.null_margins(X, labels)
    assert len(got) == 4 * 3 * 2 + 3 * 2 * 1
    assert sorted(got) == pytest.approx(sorted(want))
    assert np.sum(got) == pytest.approx(0.0, abs=1e-12)  # symmetric: (b, c) and (c, b) both counted
    assert len(triple.null_margins(X[:4], list("xyxy"))) == 0  # no sense with three sentences: no triple


def test_noise_band_is_the_quantile_of_same_sense_margins_per_view():
    rng = np.random.default_rng(1)
    V = rng.standard_normal((8, 2, 6))
    V[:, 0] = V[0, 0]  # layer 0 context-free: every margin 0
    labels = list("aaaabbbb")
    bands = triple.noise_band("elmo", {"w": V}, {"w": labels}, q=0.9)
    assert set(bands) == {View(0), View(1), View(1, "forward"), View(1, "backward")}
    assert bands[View(0)] == 0.0
    want = np.quantile(np.abs(triple.null_margins(V[:, 1, 3:], labels)), 0.9)
    assert bands[View(1, "backward")] == pytest.approx(want) and bands[View(1)] > 0
    wide = triple.noise_band("elmo", {"w": V}, {"w": labels}, q=0.99)
    assert wide[View(1)] >= bands[View(1)]


class _Enc:
    """A stand-in encoder: random contextual vectors (layer 0 fixed), counting its encodes."""

    kind = "bert"

    def __init__(self, path=None):
        self.path, self.calls = path, 0

    def word_vectors(self, texts, word):
        self.calls += 1
        if word == "杜鹃":
            raise KeyError(word)  # a set the model cannot encode is skipped
        rng = np.random.default_rng(len(texts) + self.calls)
        V = rng.standard_normal((len(texts), 3, 8))
        V[:, 0] = 1.0
        return V


def test_example_noise_on_the_example_sets_and_its_disk_cache(tmp_path, monkeypatch):
    from ctxlib.examples import EXAMPLE_SETS

    monkeypatch.setenv("CTXLAB_CACHE", str(tmp_path / "cache"))
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / "config.json").write_text(json.dumps({"kind": "bert"}), encoding="utf-8")
    enc = _Enc(ckpt)
    bands = triple.example_noise(enc)
    assert enc.calls == len(EXAMPLE_SETS) and set(bands) == {View(0), View(1), View(2)}
    assert bands[View(0)] == pytest.approx(0.0, abs=1e-12) and 0 < bands[View(1)] < 2
    again = _Enc(ckpt)
    assert triple.example_noise(again) == pytest.approx(bands) and again.calls == 0  # read from disk
    nopath = _Enc()
    triple.example_noise(nopath)
    triple.example_noise(nopath)
    assert nopath.calls == 2 * len(EXAMPLE_SETS)  # no checkpoint folder: nothing cached


def test_margin_chart_draws_the_band_behind_each_row():
    import plotly.graph_objects as go

    from ctxlib.viz.margin import margin_chart

    rows = [
        {"model": "elmo", "label": "l1", "margin": 0.05, "cos_ab": 0.9, "cos_ac": 0.85, "rank": 0.6, "band": 0.3},
        {"model": "elmo", "label": "l1 fw", "margin": -0.1, "cos_ab": 0.5, "cos_ac": 0.6, "rank": None, "band": None},
        {"model": "bert", "label": "l2", "margin": 0.2, "cos_ab": 0.7, "cos_ac": 0.5, "rank": 0.7, "band": 0.1},
    ]
    fig = margin_chart(rows, band_text="noise <band>")
    spec = fig.to_dict()
    go.Figure(spec)  # valid plotly
    rects = [s for s in spec["layout"]["shapes"] if s["type"] == "rect"]
    assert [(r["x0"], r["x1"], r["y0"], r["y1"]) for r in rects] == [
        (-0.3, 0.3, pytest.approx(1.58), pytest.approx(2.42)),
        (-0.1, 0.1, pytest.approx(-0.42), pytest.approx(0.42)),
    ]
    assert spec["layout"]["xaxis"]["range"] == pytest.approx([-0.3 * 1.35, 0.3 * 1.35])  # the band fits
    assert any(a["text"] == "noise &lt;band&gt;" for a in spec["layout"]["annotations"])
    bare = margin_chart([dict(r, band=None) for r in rows]).to_dict()["layout"]
    assert not [s for s in bare["shapes"] if s["type"] == "rect"] and len(bare["annotations"]) == 1

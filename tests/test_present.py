"""Presentation mode for a projector: chart fonts (the axes Streamlit's chart theme would size, the labels in a
drawing's boxes, a legend under the plot), the fill-mask chart's and the 80/10/10 example's characters, and the
Lesson page's layout in the mode: question and answer beside the chart, charts no taller than the screen allows,
the keys' hint and script. The browser side (sidebar closed, everything inside 1920×1080, the keys) is
tests/test_browser_present.py."""

from __future__ import annotations

import re

import plotly.graph_objects as go
import pytest
from app_pages import PAGES, chart_specs, shipped
from streamlit.testing.v1 import AppTest

from ctxlib import lesson
from ctxlib.app import i18n, lesson_views, present
from ctxlib.viz import pretraining as vp
from ctxlib.viz.common import BOX_GROW, scale_fonts

PAGE = str(PAGES / "0_Lesson.py")
STEPS = lesson.load("default").steps


def _step_of(kind: str) -> int:
    return next(i for i, s in enumerate(STEPS, 1) if s.kind == kind)


# -- chart fonts ---------------------------------------------------------------------------------------------------
def test_axes_and_legend_without_sizes_get_the_grown_size():
    """Streamlit's chart theme gives ticks, axis titles and legends its own small sizes where the figure sets none:
    in presentation mode they are written out at the grown layout size."""
    fig = go.Figure(go.Bar(x=["a"], y=[1], text=["1.0"]), layout={"title": {"text": "t"}, "yaxis": {"title": "cos"}})
    d = scale_fonts(fig, present.SCALE, present.CAP)
    lay, size = d["layout"], 12 * present.SCALE
    assert d["data"][0]["textfont"]["size"] == pytest.approx(size)
    assert lay["font"]["size"] == pytest.approx(size)
    for axis in ("xaxis", "yaxis"):
        assert lay[axis]["tickfont"]["size"] == pytest.approx(size)
    assert lay["yaxis"]["title"] == {"text": "cos", "font": {"size": pytest.approx(size)}}
    assert lay["legend"]["font"]["size"] == pytest.approx(size)
    assert size < lay["title"]["font"]["size"] <= present.CAP
    assert (
        scale_fonts({"layout": {"xaxis": {"tickfont": {"size": 30}}}}, 1.5)["layout"]["xaxis"]["tickfont"]["size"] == 30
    )


def test_labels_in_a_drawings_boxes_grow_less_than_the_rest():
    """Boxes drawn in data coordinates do not grow with the text, so their labels grow by BOX_GROW at most; a title
    placed on the paper grows as usual."""
    layout = {
        "shapes": [{"type": "rect", "x0": 0, "x1": 1, "y0": 0, "y1": 1}],
        "annotations": [
            {"text": "in a box", "x": 0.5, "y": 0.5, "xref": "x", "yref": "y", "font": {"size": 12}},
            {"text": "no size", "x": 0.5, "y": 0.2, "xref": "x", "yref": "y"},
            {"text": "title", "x": 0.5, "y": 1, "xref": "paper", "yref": "paper", "font": {"size": 12}},
        ],
    }
    notes = scale_fonts({"data": [], "layout": layout}, 1.75, 26)["layout"]["annotations"]
    assert [a["font"]["size"] for a in notes] == pytest.approx([12 * BOX_GROW, 12 * BOX_GROW, 21])
    plain = {"data": [], "layout": {"annotations": [{"text": "n", "x": 0, "y": 0, "xref": "x", "font": {"size": 12}}]}}
    assert scale_fonts(plain, 1.75, 26)["layout"]["annotations"][0]["font"]["size"] == pytest.approx(21)  # no boxes


def test_a_legend_under_the_plot_moves_down_clear_of_the_ticks():
    d = scale_fonts({"data": [], "layout": {"legend": {"orientation": "h", "y": -0.15}}}, 1.75)
    assert d["layout"]["legend"]["y"] == pytest.approx(-0.2625) and d["layout"]["legend"]["yanchor"] == "top"
    d = scale_fonts({"data": [], "layout": {"legend": {"y": 1.0, "yanchor": "bottom"}}}, 1.75)
    assert d["layout"]["legend"]["y"] == 1.0 and d["layout"]["legend"]["yanchor"] == "bottom"


def test_fill_mask_characters_and_titles_are_large_in_presentation_mode():
    """The candidates (y labels) and the panel titles naming each [MASK]'s original character reach the cap."""
    results = [{"candidates": [("京", 0.5), ("约", 0.2)]}, {"candidates": [("天", 0.4), ("气", 0.1)]}]
    fig = vp.fill_mask_figure(results, ["京", "天"], "[MASK] {n}: {orig}")
    d = scale_fonts(fig, present.SCALE, present.CAP)
    lay = d["layout"]
    assert [lay[k]["tickfont"]["size"] for k in ("yaxis", "yaxis2")] == [present.CAP, present.CAP]
    assert [a["font"]["size"] for a in lay["annotations"]] == [present.CAP, present.CAP]
    assert [a["text"] for a in lay["annotations"]] == ["[MASK] 1: 京", "[MASK] 2: 天"]


def test_the_original_above_a_changed_token_is_sized_with_the_example():
    """The 80/10/10 example writes the original character above each changed token in em (it grows with the
    example's zoom in presentation mode), at least 0.8 of the token's size."""
    ex = {
        "tokens": ["[CLS]", "[MASK]", "好", "[SEP]"],
        "original_tokens": ["[CLS]", "很", "好", "[SEP]"],
        "segment_ids": [0, 0, 0, 0],
        "masked": [{"index": 1, "kind": "mask"}],
    }
    h = vp.example_html(ex)
    top = re.search(r'<span style="display:block;font-size:([0-9.]+)em;[^"]*">很</span>', h)
    assert top is not None, h
    assert float(top.group(1)) >= 0.8
    assert "11px" not in h


# -- the Lesson page in presentation mode ---------------------------------------------------------------------------
def test_chart_room_follows_the_screen(monkeypatch):
    fm, taglm = STEPS[_step_of("fill_mask") - 1], STEPS[_step_of("taglm") - 1]
    assert lesson_views.chart_room(fm, 1080) is None  # outside a script run: not in presentation mode
    monkeypatch.setattr(present, "is_on", lambda: True)
    assert lesson_views.chart_room(fm, None) == lesson_views.chart_room(fm, lesson_views.SCREEN_H)
    assert lesson_views.chart_room(fm, 900) == lesson_views.chart_room(fm, 1080) - 180
    assert lesson_views.chart_room(taglm, 1080) < lesson_views.chart_room(fm, 1080) // 2 + 1  # two charts share it
    assert lesson_views.chart_room(fm, 200) == 220  # a tiny window: still a readable chart (and a scroll bar)


def _run(**qp) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=180)
    at.query_params.update({"lang": "en", **qp})
    at.run()
    assert not at.exception, at.exception
    return at


@pytest.mark.parametrize("kind", ["fill_mask", "attention"])
def test_presentation_lesson_puts_the_answer_beside_a_chart_that_fits(kind):
    step = _step_of(kind)
    for m in STEPS[step - 1].models():  # the shipped models, as the lesson walk in tests/test_app_lesson.py
        shipped(m)
    at = _run(present="1", step=str(step))
    keys = i18n.lookup("present.keys", "en")
    assert keys in [c.value for c in at.caption]
    assert len(at.columns) == 5  # the navigation row's three, then question | result
    reveal = i18n.lookup("lesson.reveal", "en")
    assert at.columns[3].button[0].label == reveal  # the reveal button is in the left column
    at.columns[3].button[0].click().run()
    assert not at.exception, at.exception
    left, right = at.columns[3], at.columns[4]
    assert left.success and not right.success  # the answer stands beside the chart ...
    assert right.get("plotly_chart") and not left.get("plotly_chart")
    room = lesson_views.SCREEN_H - lesson_views.ABOVE - lesson_views.BESIDE.get(kind, 70)
    for spec in chart_specs(at):  # ... no taller than a 1080 px screen leaves (the browser has not said its own)
        assert spec["layout"]["height"] <= room
        assert spec["layout"]["yaxis"]["tickfont"]["size"] >= 18  # the labels: half as large again at least


def test_outside_presentation_mode_the_lesson_is_one_column_without_keys():
    shipped("bert")
    at = _run(step=str(_step_of("attention")))
    assert i18n.lookup("present.keys", "en") not in [c.value for c in at.caption]
    assert len(at.columns) == 3
    next(b for b in at.button if b.label == i18n.lookup("lesson.reveal", "en")).click().run()
    spec = chart_specs(at)[0]  # drawn as the builder made it: not scaled
    assert spec["layout"].get("font", {}).get("size", 12) < 12 * present.SCALE

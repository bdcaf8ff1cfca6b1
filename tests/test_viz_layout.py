"""viz.common.base_layout: the one CJK-font/margin block every figure's layout starts from. Figures come out as they
did when each module wrote the block out itself: the expected layouts below are those modules' old literals."""

import re
from pathlib import Path

import numpy as np
import plotly.graph_objects as go

from ctxlib.viz import attention, lesson, live
from ctxlib.viz.common import CJK_FONT, base_layout

VIZ = Path(__file__).resolve().parents[1] / "ctxlib" / "viz"


def _layout(d: dict) -> dict:
    return go.Figure(layout=d).to_dict()["layout"]


def test_base_layout_fonts_margins_and_extras():
    assert base_layout() == {"margin": {"l": 10, "r": 10, "t": 40, "b": 10}, "font": {"family": CJK_FONT}}
    d = base_layout((60, 20, 50, 130), hover=True, height=300, title={"text": "t"})
    assert d == {
        "margin": {"l": 60, "r": 20, "t": 50, "b": 130},
        "font": {"family": CJK_FONT},
        "hoverlabel": {"font": {"family": CJK_FONT}},
        "height": 300,
        "title": {"text": "t"},
    }
    assert base_layout(font={"family": "serif", "size": 9})["font"] == {"family": "serif", "size": 9}  # kw wins


def test_pair_cosines_layout_as_before():
    rows = [(("word2vec", "emb"), [1.0, 0.5]), (("bert", "L2"), [0.7, -0.2])]
    fig = lesson.pair_cosines_figure(rows, ["1-2", "1-3"], title="苹果", y_title="cos")
    want = {
        "barmode": "group",
        "height": 340,
        "title": {"text": "苹果", "x": 0.0, "xanchor": "left"},
        "yaxis": {"title": {"text": "cos"}, "range": [-0.25, 1.15]},
        "legend": {"orientation": "h", "x": 1.0, "xanchor": "right", "y": 1.0, "yanchor": "bottom"},
        "margin": {"l": 10, "r": 10, "t": 60, "b": 10},
        "font": {"family": CJK_FONT},
        "hoverlabel": {"font": {"family": CJK_FONT}},
    }
    assert fig.to_dict()["layout"] == _layout(want)


def test_live_loss_layout_as_before():
    fig = live.live_loss_figure(
        [{"s": 1.0, "loss": 3.2}, {"s": 2.0, "loss": 2.9}],
        {"title": "损失", "seconds": "秒", "loss": "loss"},
        height=280,
    )
    want = dict(
        title=dict(text="损失", y=0.97, yanchor="top"),
        height=280,
        plot_bgcolor="white",
        margin=dict(l=10, r=10, t=50, b=30),
        font=dict(family=CJK_FONT),
        hoverlabel=dict(font=dict(family=CJK_FONT)),
        showlegend=False,
        xaxis=dict(title=dict(text="秒"), showgrid=True, gridcolor="#eee", rangemode="tozero"),
        yaxis=dict(title=dict(text="loss"), showgrid=True, gridcolor="#eee"),
    )
    assert fig.to_dict()["layout"] == _layout(want)


def test_attention_layouts_as_before():
    cos = np.array([1.0, 0.8, 0.6], np.float32)
    fig = attention.drift_figure(cos, ["emb", "L1", "L2"], "苹果", title="drift")
    labels = attention.AxisLabels()
    want = dict(
        xaxis=dict(tickmode="array", tickvals=[0, 1, 2], ticktext=["emb", "L1", "L2"], title=dict(text=labels.layer)),
        yaxis=dict(title=dict(text=labels.drift_y.format(w="苹果")), range=[0.0, 1.08]),
        title=dict(text="drift"),
        height=330,
        margin=dict(l=60, r=10, t=40, b=10),
        font=dict(family=CJK_FONT),
    )
    assert fig.to_dict()["layout"] == _layout(want)
    wa = np.random.default_rng(0).random((2, 4)).astype(np.float32)
    fig = attention.word_attention_figure(wa, ["苹", "果", "好", "吃"], "苹果", title="看")
    ref = go.Figure(go.Heatmap(z=wa))
    ref.update_xaxes(
        tickmode="array", tickvals=list(range(4)), ticktext=["苹", "果", "好", "吃"], side="bottom", automargin=True
    )
    ref.update_yaxes(autorange="reversed")
    ref.update_layout(
        title="看", height=70 + 30 + 36 * 2, margin=dict(l=60, r=10, t=50, b=30), font=dict(family=CJK_FONT)
    )
    assert fig.to_dict()["layout"] == ref.to_dict()["layout"]


def test_no_viz_module_writes_the_font_and_margin_block_itself():
    block = re.compile(
        r"margin\s*=\s*dict\(|[\"']margin[\"']\s*:\s*\{"  # the margins, or the layout's font alone
        r"|font\s*=\s*dict\(family=CJK_FONT\)|[\"']font[\"']\s*:\s*\{[\"']family[\"']\s*:\s*CJK_FONT\}"
    )
    found = [
        f"{p.name}:{i}"
        for p in sorted(VIZ.glob("*.py"))
        if p.name != "common.py"
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if block.search(line)
    ]
    assert found == []

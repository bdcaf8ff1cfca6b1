"""Pure plot builders for a fine-tuning run (no streamlit): `history_figure`, the live run's loss and accuracy per
step, and `comparison_figure`, the accuracies of the ways a pretrained model is used, beside the majority class.

Every text in a figure comes in `labels` (already translated); user text is escaped. The diagrams of how a pretrained
model is used are in viz/transfer.py.
"""

from __future__ import annotations

import plotly.graph_objects as go

from .common import base_layout, escape
from .transfer import BERT_C, GREY, HEAD_C


def history_figure(points: list[dict], total: int, labels: dict[str, str]) -> go.Figure:
    """Loss (left) and the batch's accuracy with its running mean (right) per fine-tuning step; the x axes span
    all `total` steps from the start, so the live plot grows into them. labels: loss, acc, mean, step."""
    steps = [p["step"] for p in points]
    acc = [p["acc"] for p in points]
    mean = [sum(acc[: k + 1]) / (k + 1) for k in range(len(acc))]
    xr = [0, max(total, 1) + 0.5]
    data = [
        {
            "type": "scatter",
            "x": steps,
            "y": [p["loss"] for p in points],
            "mode": "lines+markers",
            "name": labels["loss"],
            "line": {"color": HEAD_C},
        },
        {
            "type": "scatter",
            "x": steps,
            "y": acc,
            "mode": "markers",
            "name": labels["acc"],
            "xaxis": "x2",
            "yaxis": "y2",
            "marker": {"color": BERT_C, "opacity": 0.5},
        },
        {
            "type": "scatter",
            "x": steps,
            "y": mean,
            "mode": "lines",
            "name": labels["mean"],
            "xaxis": "x2",
            "yaxis": "y2",
            "line": {"color": BERT_C},
        },
    ]
    title = lambda text, x: {
        "text": text,
        "x": x,
        "y": 1.0,
        "xref": "paper",
        "yref": "paper",
        "xanchor": "center",  # noqa: E731
        "yanchor": "bottom",
        "showarrow": False,
        "font": {"size": 13},
    }
    layout = {
        "xaxis": {"domain": [0, 0.45], "range": xr, "title": {"text": labels["step"]}},
        "yaxis": {"rangemode": "tozero"},
        "xaxis2": {"domain": [0.55, 1], "range": xr, "title": {"text": labels["step"]}, "anchor": "y2"},
        "yaxis2": {"range": [0, 1.02], "anchor": "x2"},
        "annotations": [title(labels["loss"], 0.225), title(labels["acc"], 0.775)],
        "height": 300,
        "legend": {"orientation": "h", "y": -0.3},
        **base_layout(),
    }
    return go.Figure({"data": data, "layout": layout})


def comparison_figure(
    rows: list[tuple[str, float | None]], majority: float | None, labels: dict[str, str]
) -> go.Figure:
    """Horizontal accuracy bars, first row on top (None: not measured, drawn as an empty row with a note), and the
    majority-class line. labels: title, accuracy, majority, missing."""
    rows = list(rows)[::-1]
    names = [escape(n) for n, _ in rows]
    vals = [v if v is not None else 0 for _, v in rows]
    colors = [HEAD_C if k == len(rows) - 1 else (GREY if v is None else BERT_C) for k, (_, v) in enumerate(rows)]
    fig = go.Figure(
        go.Bar(
            x=vals,
            y=names,
            orientation="h",
            marker={"color": colors},
            text=[labels["missing"] if v is None else f"{v:.3f}" for _, v in rows],
            textposition="outside",
            hovertemplate="%{y}: %{x:.3f}<extra></extra>",
        )
    )
    if majority is not None:  # the line's label above the plot, clear of the bars
        fig.add_vline(x=majority, line={"dash": "dot", "color": GREY})
        fig.add_annotation(
            x=majority,
            y=1.0,
            xref="x",
            yref="paper",
            yanchor="bottom",
            showarrow=False,
            text=labels["majority"].format(v=majority),
            font={"size": 11, "color": GREY},
        )
    fig.update_layout(
        **base_layout(
            (10, 10, 70, 10),
            title=labels["title"],
            height=110 + 44 * len(rows),
            xaxis={"range": [0, 1.08], "title": labels["accuracy"]},
        )
    )
    return fig

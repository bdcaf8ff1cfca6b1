"""Plots of the lesson page's views that no other page draws (the others reuse the pages' builders)."""

from __future__ import annotations

import plotly.graph_objects as go

from .common import PALETTE, base_layout, escape


def pair_cosines_figure(
    rows: list[tuple[tuple[str, str], list[float]]],
    pair_names: list[str],
    title: str = "",
    y_title: str = "cos",
    height: int = 340,
) -> go.Figure:
    """Grouped bars: for each (model, layer name) (x: both, on two lines), the cosine of the word's vector in sentence 1 with its vector in
    each other sentence (one bar colour per pair, `pair_names`). One y scale for all models, so bars compare."""
    data = []
    for j, name in enumerate(pair_names):
        ys = [cs[j] for _, cs in rows]
        data.append(
            {
                "type": "bar",
                "name": escape(name),
                "x": ["<br>".join(map(escape, m)) for m, _ in rows],
                "y": ys,
                "marker": {"color": PALETTE[j % len(PALETTE)]},
                "textposition": "outside",
                "text": [f"{c:.4f}" if c > 0.995 else f"{c:.3f}" for c in ys],
                "hovertemplate": "%{x}<br>" + escape(name) + ": %{y:.4f}<extra></extra>",
            }
        )
    lo = min([c for _, cs in rows for c in cs] + [0.0])
    return go.Figure(
        {
            "data": data,
            "layout": base_layout(
                (10, 10, 60, 10),
                hover=True,
                barmode="group",
                height=height,
                title={"text": escape(title), "x": 0.0, "xanchor": "left"},
                yaxis={"title": {"text": escape(y_title)}, "range": [min(lo - 0.05, 0.0), 1.15]},
                legend={"orientation": "h", "x": 1.0, "xanchor": "right", "y": 1.0, "yanchor": "bottom"},
            ),
        }
    )

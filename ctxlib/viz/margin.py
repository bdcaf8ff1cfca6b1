"""The home page's three-sentence demo chart (`margin_chart`): per model layer, the margin cos(A,B) - cos(A,C) as a
lollipop and the held-out pair ranking as a bar, with the models' fixed colours and markers of viz/explorer.py.

User text goes through `common.escape` before it reaches Plotly.
"""

from __future__ import annotations

import plotly.graph_objects as go

from .common import escape
from .explorer import MODEL_SYMBOLS, chart_layout, model_colour, spec_figure


def margin_chart(
    rows: list[dict],
    title: str = "",
    margin_title: str = "cos(A,B) − cos(A,C)",
    rank_title: str = "held-out pair ranking",
    chance_text: str = "chance 0.5",
    height: int | None = None,
    band_text: str = "noise band",
) -> go.Figure:
    """Home-page three-sentence demo: per row (a model's layer or ELMo half; dicts with `model`, `label` (escaped
    here), `margin`, `cos_ab`, `cos_ac` and `rank` (held-out pair ranking, or None)), a lollipop of the margin from
    a zero line (filled: the same-sense pair is closer) and, beside it on the same rows, the pair-ranking bar with
    the chance line. One x axis per panel for all models, so rows compare directly. A row with a `band` (its noise
    band, `triple.noise_band`) gets a grey rectangle from -band to +band behind its lollipop, `band_text` above."""
    ys = [f"{escape(r['model'])} · {escape(r['label'])}" for r in rows]
    models = list(dict.fromkeys(r["model"] for r in rows))
    data = []
    for i, m in enumerate(models):
        idx = [k for k, r in enumerate(rows) if r["model"] == m]
        col = model_colour(m, i)
        lx, ly = [], []
        for k in idx:
            lx += [0, rows[k]["margin"], None]
            ly += [ys[k], ys[k], None]
        data.append(
            dict(
                type="scatter",
                x=lx,
                y=ly,
                mode="lines",
                line=dict(color=col, width=2),
                hoverinfo="skip",
                showlegend=False,
                xaxis="x",
                yaxis="y",
            )
        )
        data.append(
            dict(
                type="scatter",
                x=[rows[k]["margin"] for k in idx],
                y=[ys[k] for k in idx],
                mode="markers+text",
                name=escape(m),
                marker=dict(
                    size=12,
                    color=[col if rows[k]["margin"] > 1e-9 else "white" for k in idx],
                    line=dict(color=col, width=2),
                    symbol=MODEL_SYMBOLS.get(m, "circle"),
                ),
                text=[f"{rows[k]['margin']:+.3f}" for k in idx],
                textfont=dict(size=11),
                textposition=["middle right" if rows[k]["margin"] >= 0 else "middle left" for k in idx],
                customdata=[[rows[k]["cos_ab"], rows[k]["cos_ac"]] for k in idx],
                showlegend=False,
                hovertemplate="%{y}<br>cos(A,B) = %{customdata[0]:.4f}<br>cos(A,C) = %{customdata[1]:.4f}"
                "<br>" + escape(margin_title) + " = %{x:+.4f}<extra></extra>",
                xaxis="x",
                yaxis="y",
            )
        )
        ranked = [k for k in idx if rows[k].get("rank") is not None]
        data.append(
            dict(
                type="bar",
                x=[rows[k]["rank"] for k in ranked],
                y=[ys[k] for k in ranked],
                orientation="h",
                marker=dict(color=col),
                opacity=0.75,
                showlegend=False,
                name=escape(m),
                text=[f"{rows[k]['rank']:.2f}" for k in ranked],
                textposition="outside",
                hovertemplate="%{y}<br>%{x:.3f}<extra></extra>",
                xaxis="x2",
                yaxis="y2",
            )
        )
    bands = [(len(rows) - 1 - k, r["band"]) for k, r in enumerate(rows) if r.get("band")]  # category index: bottom 0
    span = max([abs(r["margin"]) for r in rows] + [b for _, b in bands] + [0.1]) * 1.35  # at least ±0.135
    cats = dict(tickfont=dict(size=11), categoryorder="array", categoryarray=ys[::-1], type="category")
    # the layout make_subplots(1, 2, shared_yaxes=True, column_widths=[0.62, 0.38], horizontal_spacing=0.03) writes
    layout = dict(
        xaxis=dict(
            anchor="y", domain=[0.0, 0.97 * 0.62], range=[-span, span], title=dict(text=margin_title), zeroline=False
        ),
        yaxis=dict(anchor="x", domain=[0.0, 1.0], **cats),
        xaxis2=dict(anchor="y2", domain=[0.97 * 0.62 + 0.03, 1.0], range=[0, 1.12], title=dict(text=rank_title)),
        yaxis2=dict(anchor="x2", domain=[0.0, 1.0], matches="y", showticklabels=False, **cats),
        shapes=[
            dict(type="line", x0=0, x1=0, xref="x", y0=0, y1=1, yref="y domain", line=dict(color="#444", width=1)),
            dict(
                type="line",
                x0=0.5,
                x1=0.5,
                xref="x2",
                y0=0,
                y1=1,
                yref="y2 domain",
                line=dict(color="grey", dash="dot"),
            ),
        ]
        + [
            dict(
                type="rect",
                x0=-b,
                x1=b,
                xref="x",
                y0=i - 0.42,
                y1=i + 0.42,
                yref="y",
                layer="below",
                fillcolor="rgba(128,128,128,0.22)",
                line=dict(width=0),
            )
            for i, b in bands
        ],
        annotations=[
            dict(
                x=0.5,
                y=1.0,
                yref="paper",
                xref="x2",
                text=escape(chance_text),
                showarrow=False,
                yanchor="bottom",
                font=dict(size=11, color="grey"),
            )
        ]
        + (
            [
                dict(
                    x=0,
                    y=1.0,
                    yref="paper",
                    xref="x",
                    text=escape(band_text),
                    showarrow=False,
                    yanchor="bottom",
                    font=dict(size=11, color="grey"),
                )
            ]
            if bands
            else []
        ),
        bargap=0.35,
        **chart_layout(title, height or 90 + 26 * len(rows)),
    )
    return spec_figure(data, layout)

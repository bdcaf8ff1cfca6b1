"""Pure plot builders for BERT attention (arrays in, Plotly figure or HTML string out).

After BertViz (Vig 2019, "A Multiscale Visualization of Attention in the
Transformer Model") and Clark et al. 2019 ("What Does BERT Look At?"), but
drawn fully offline: Plotly figures, and a head view as inline SVG + JS with
every token passed through `html.escape`. No streamlit import here.

Shapes: `att` is (n_layers, n_heads, T, T), rows = the attending token ("from"),
columns = the attended token ("to"); each row sums to 1 (post-softmax).

A causal (left-to-right, GPT) model cannot attend to the right: its cells above the diagonal are masked,
not learned zeros. With `causal=True` the heatmaps leave them out of the colour scale (NaN) and draw them
as a separate grey, hatched "masked" layer.

The numbers the views show (head summaries, word attention, drift) are in viz/attention_stats.py.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from .attention_stats import AxisLabels, kind_label
from .common import base_layout, escape

HEAD_COLORS = [
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
    "#393b79",
    "#637939",
    "#8c6d31",
    "#843c39",
    "#7b4173",
    "#3182bd",
]


def axis_labels(tokens: list[str]) -> list[str]:
    """Unique axis labels ("3 很") so repeated characters do not merge on a categorical axis."""
    return [f"{i} {escape(t)}" for i, t in enumerate(tokens)]


def parse_selection(raw: str, default: tuple[int, int]) -> tuple[int, int]:
    """(layer, head) from a "layer,head" string such as ?sel=3,2 (1-based); `default` when it is not one."""
    q = [int(x) for x in raw.split(",") if x.strip().isdigit()]
    return (q[0], q[1]) if len(q) == 2 and q[0] >= 1 and q[1] >= 1 else default


def clamp_selection(sel: tuple[int, int], n_layers: int, n_heads: int) -> tuple[int, int]:
    """(layer, head) limited to the model's last layer and head (a shared link may name a bigger model's)."""
    return min(sel[0], n_layers), min(sel[1], n_heads)


def clicked_head(event) -> tuple[int, int] | None:
    """(layer, head) of the model-view tile clicked in a plotly selection event (a dict), or None."""
    pts = [p for p in (event or {}).get("selection", {}).get("points", []) if p.get("customdata")]
    return tuple(int(x) for x in pts[0]["customdata"][:2]) if pts else None


# -- Plotly figures ----------------------------------------------------------------------
MASKED_FILL, MASKED_LINE = "#e3e3e3", "#9a9a9a"  # a causal model's masked cells: grey with dark hatching


def causal_mask(T: int) -> np.ndarray:
    """(T, T) bool: True above the diagonal, the cells a left-to-right model cannot attend to."""
    return np.triu(np.ones((T, T), dtype=bool), k=1)


def _staircase(n: int, x0: float = 0.0, y0: float = 0.0) -> tuple[list, list]:
    """Outline of the cells above the diagonal of an n x n block whose cell (0, 0) is centred at (x0, y0)."""
    if n < 2:
        return [], []
    pts = [(0.5, -0.5), (n - 0.5, -0.5), (n - 0.5, n - 1.5)]
    for i in range(n - 2, -1, -1):
        pts += [(i + 0.5, i + 0.5), (i + 0.5, i - 0.5)]
    return [x0 + x for x, _ in pts], [y0 + y for _, y in pts]


def masked_traces(mask: np.ndarray, blocks: list[tuple[float, float]], n: int, label: str | None) -> list[dict]:
    """The "masked" layer of a causal heatmap: a grey heatmap on the masked cells (hover: `label`; None: no hover)
    and a hatched outline over each n x n block whose cell (0, 0) sits at (x0, y0) in `blocks`. Both traces are
    named "masked"."""
    grey = np.where(mask, 1.0, np.nan)
    xs, ys = [], []
    for x0, y0 in blocks:
        x, y = _staircase(n, x0, y0)
        if x:
            xs += x + [x[0], None]
            ys += y + [y[0], None]
    return [
        dict(
            type="heatmap",
            z=grey,
            colorscale=[[0, MASKED_FILL], [1, MASKED_FILL]],
            zmin=0,
            zmax=1,
            showscale=False,
            name="masked",
            **(dict(hovertemplate=f"{escape(label)}<extra></extra>") if label else dict(hoverinfo="skip")),
        ),
        dict(
            type="scatter",
            x=xs,
            y=ys,
            mode="lines",
            fill="toself",
            name="masked",
            showlegend=False,
            line=dict(color=MASKED_LINE, width=1),
            fillcolor="rgba(0,0,0,0)",
            hoverinfo="skip",
            fillpattern=dict(shape="/", fgcolor=MASKED_LINE, bgcolor="rgba(0,0,0,0)", size=6, solidity=0.15),
        ),
    ]


def attention_heatmap(
    a: np.ndarray,
    tokens: list[str],
    title: str = "",
    height: int = 420,
    causal: bool = False,
    masked_label: str = "masked",
    labels: AxisLabels = AxisLabels(),
) -> go.Figure:
    """One (T, T) attention matrix: rows attend (from), columns are attended (to); y axis titled `labels.from_to`.
    Built from one dict (update_* calls re-validate the figure each time).

    `causal`: the cells above the diagonal are masked (a left-to-right model cannot look right): they are left
    out of the colour scale (NaN) and drawn grey and hatched, hover text `masked_label`."""
    a = np.asarray(a, dtype=np.float64)
    tok = axis_labels(tokens)
    n = len(tokens)
    mask = causal_mask(n) if causal else np.zeros((n, n), dtype=bool)
    z = np.where(mask, np.nan, a)
    zmax = float(np.nanmax(z)) if n and not np.all(np.isnan(z)) else 1.0
    ticks = dict(
        tickmode="array", tickvals=list(range(n)), ticktext=[escape(t) for t in tokens], tickfont=dict(size=11)
    )
    data = [
        dict(
            type="heatmap",
            z=z,
            x=list(range(n)),
            y=list(range(n)),
            colorscale="Blues",
            zmin=0,
            zmax=max(zmax, 1e-6),
            customdata=[[[tok[i], tok[j]] for j in range(n)] for i in range(n)],
            hovertemplate="%{customdata[0]} → %{customdata[1]}<br>%{z:.3f}<extra></extra>",
            hoverongaps=False,
            colorbar=dict(thickness=10),
        )
    ]
    if causal:
        data += masked_traces(mask, [(0.0, 0.0)], n, masked_label)
    return go.Figure(
        dict(
            data=data,
            layout=base_layout(
                (50, 10, 110, 10),
                xaxis=dict(side="top", **ticks),
                yaxis=dict(title=dict(text=escape(labels.from_to)), autorange="reversed", **ticks),
                title=dict(text=escape(title), y=0.995, yanchor="top"),
                height=height + 30,
                plot_bgcolor="white",
            ),
        )
    )


def model_view(
    att: np.ndarray,
    tokens: list[str],
    selected: tuple[int, int] | None = None,
    cell_px: int = 110,
    causal: bool = False,
    labels: AxisLabels = AxisLabels(),
) -> go.Figure:
    """All layers x heads as one tiled heatmap (fast even for 12 x 12), plus an invisible marker at each
    tile's centre so a click selects (layer, head) via Streamlit's plotly selection events (trace 1).

    `causal`: every tile's cells above the diagonal are masked: NaN in the heatmap, drawn grey and hatched
    by two extra traces named "masked" (see masked_traces)."""
    att = np.asarray(att, dtype=np.float32)
    n_layers, n_heads, T, _ = att.shape
    gap = max(1, T // 8)
    size = T + gap
    big = np.full((n_layers * size - gap, n_heads * size - gap), np.nan, dtype=np.float32)
    for layer in range(n_layers):
        for h in range(n_heads):
            r0, c0 = layer * size, h * size
            big[r0 : r0 + T, c0 : c0 + T] = np.where(causal_mask(T), np.nan, att[layer, h]) if causal else att[layer, h]
    zmax = float(np.nanmax(big)) if att.size else 1.0  # one scale for all tiles, so heads compare
    fig = go.Figure(
        go.Heatmap(z=big, colorscale="Blues", zmin=0, zmax=max(zmax, 1e-6), showscale=False, hoverinfo="skip")
    )
    cx, cy, cd = [], [], []
    for layer in range(n_layers):
        for h in range(n_heads):
            cx.append(h * size + (T - 1) / 2)
            cy.append(layer * size + (T - 1) / 2)
            cd.append([layer + 1, h + 1])
    fig.add_trace(
        go.Scatter(
            x=cx,
            y=cy,
            mode="markers",
            customdata=cd,
            marker=dict(size=max(8, cell_px // 2), opacity=0.0, symbol="square"),
            hovertemplate=escape(labels.layer_n).format(n="%{customdata[0]}")
            + ", "
            + escape(labels.head_n).format(n="%{customdata[1]}")
            + "<extra></extra>",
            showlegend=False,
        )
    )
    if causal:
        masked = np.zeros(big.shape, dtype=bool)
        for layer in range(n_layers):
            for h in range(n_heads):
                masked[layer * size : layer * size + T, h * size : h * size + T] = causal_mask(T)
        for tr in masked_traces(
            masked, [(h * size, layer * size) for layer in range(n_layers) for h in range(n_heads)], T, None
        ):
            fig.add_trace(tr)
    if selected is not None:
        layer, h = selected[0] - 1, selected[1] - 1
        if 0 <= layer < n_layers and 0 <= h < n_heads:
            fig.add_shape(
                type="rect",
                x0=h * size - 0.5 - gap / 3,
                x1=h * size + T - 0.5 + gap / 3,
                y0=layer * size - 0.5 - gap / 3,
                y1=layer * size + T - 0.5 + gap / 3,
                line=dict(color="#d62728", width=3),
            )
    fig.update_xaxes(
        tickmode="array",
        tickvals=[h * size + (T - 1) / 2 for h in range(n_heads)],
        ticktext=[escape(labels.head_n.format(n=h + 1)) for h in range(n_heads)],
        side="top",
        showgrid=False,
        zeroline=False,
    )
    fig.update_yaxes(
        tickmode="array",
        tickvals=[layer * size + (T - 1) / 2 for layer in range(n_layers)],
        ticktext=[escape(labels.layer_n.format(n=layer + 1)) for layer in range(n_layers)],
        autorange="reversed",
        showgrid=False,
        zeroline=False,
        scaleanchor="x",
    )
    fig.update_layout(
        **base_layout((60, 10, 40, 10), height=min(1400, 60 + cell_px * n_layers), plot_bgcolor="white", dragmode=False)
    )
    return fig


def head_summary_figure(
    rows: list[dict], n_layers: int, n_heads: int, metric: str, title: str = "", labels: AxisLabels = AxisLabels()
) -> go.Figure:
    """A layers x heads heatmap of one head-summary metric (entropy, cls, sep, prev, next, self); hover: the kind."""
    z = np.zeros((n_layers, n_heads), dtype=np.float32)
    kinds = [["" for _ in range(n_heads)] for _ in range(n_layers)]
    for r in rows:
        z[r["layer"] - 1, r["head"] - 1] = r[metric]
        kinds[r["layer"] - 1][r["head"] - 1] = kind_label(r["kind"], labels)
    zmax = max((r["max_entropy"] for r in rows), default=1.0) if metric == "entropy" else 1.0
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=[escape(labels.head_n.format(n=h + 1)) for h in range(n_heads)],
            y=[escape(labels.layer_n.format(n=layer + 1)) for layer in range(n_layers)],  # "头 1", "第 1 层" in zh
            colorscale="Viridis",
            zmin=0,
            zmax=zmax,
            customdata=kinds,
            texttemplate="%{z:.2f}",
            hovertemplate="%{y} %{x}: %{z:.3f}<br>%{customdata}<extra></extra>",
            colorbar=dict(thickness=10),
        )
    )
    fig.update_yaxes(autorange="reversed")
    fig.update_layout(**base_layout((60, 10, 40, 10), title=title, height=80 + 34 * n_layers))
    return fig


def word_attention_figure(
    wa: np.ndarray, tokens: list[str], word: str, title: str = "", labels: AxisLabels = AxisLabels()
) -> go.Figure:
    """Layers x context tokens: where the word looks in each layer (mean over heads and its characters)."""
    n_layers, T = wa.shape
    tok = axis_labels(tokens)
    fig = go.Figure(
        go.Heatmap(
            z=wa,
            x=list(range(T)),
            y=[escape(labels.layer_n.format(n=layer + 1)) for layer in range(n_layers)],
            colorscale="Oranges",
            zmin=0,
            customdata=[tok[:T] for _ in range(n_layers)],
            hovertemplate=f"{escape(word)} → %{{customdata}}<br>%{{y}}: %{{z:.3f}}<extra></extra>",
            colorbar=dict(thickness=10),
        )
    )
    # The token labels sit under the map: with sentence B they are many and turn vertical, and above the map they ran
    # into the title. The bottom margin grows with the longest label ([SEP]: 5 characters).
    room = 14 + 9 * max((len(t) for t in tokens), default=1) if T > 12 else 30
    fig.update_xaxes(
        tickmode="array", tickvals=list(range(T)), ticktext=[escape(t) for t in tokens], side="bottom", automargin=True
    )
    fig.update_yaxes(autorange="reversed")
    fig.update_layout(**base_layout((60, 10, 50, room), title=escape(title), height=70 + room + 36 * n_layers))
    return fig


def drift_figure(
    cos: np.ndarray, layer_names: list[str], word: str, title: str = "", labels: AxisLabels = AxisLabels()
) -> go.Figure:
    """Cosine of the word's vector at each layer with its layer-0 (context-free) vector."""
    x = list(range(len(cos)))
    w = escape(word)
    return go.Figure(
        dict(
            data=[
                dict(
                    type="scatter",
                    x=x,
                    y=[float(c) for c in cos],
                    mode="lines+markers+text",
                    text=[f"{c:.2f}" for c in cos],
                    textposition="top center",
                    customdata=[escape(n) for n in layer_names],
                    hovertemplate="%{customdata}: cos = %{y:.3f}<extra></extra>",
                    line=dict(color="#d62728"),
                )
            ],
            layout=base_layout(
                (60, 10, 40, 10),
                xaxis=dict(
                    tickmode="array",
                    tickvals=x,
                    ticktext=[escape(n) for n in layer_names],
                    title=dict(text=escape(labels.layer)),
                ),
                yaxis=dict(
                    title=dict(text=escape(labels.drift_y).format(w=w)),
                    range=[min(0.0, float(np.min(cos)) - 0.05), 1.08],
                ),
                title=dict(text=escape(title)),
                height=330,
            ),
        )
    )

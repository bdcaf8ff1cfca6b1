"""Plot builders for the Transformer mechanics page (ctxlib.mechanics): arrays and translated labels in, Plotly
figures out, no streamlit. Rows are tokens (CJK tick labels, escaped), hover shows the token(s) and the value.

Values go into the figure as plain lists rounded to 5 decimals (masked cells as null), so the page's numbers can be
read back from the chart and checked against the model."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import plotly.graph_objects as go

from ..vecmath import norms
from .attention import axis_labels, masked_traces
from .common import PALETTE, base_layout, escape


class Labels(NamedTuple):
    """Axis and hover text (translated by the page); `from_to` titles a (T, T) matrix's y axis."""

    from_to: str = "from ↓  to →"
    feature: str = "feature"
    value: str = "value"
    masked: str = "masked: a left-to-right model cannot look ahead"
    distance: str = "distance (query after key)"
    score: str = "q·k / √d"
    unrotated: str = "without rotation"
    position: str = "position"
    norm: str = "length |v|"


def _plain(M: np.ndarray) -> list:
    """A matrix as nested lists, 5 decimals, non-finite values (masked cells) as None."""
    a = np.round(np.asarray(M, dtype=np.float64), 5)
    return [[float(v) if np.isfinite(v) else None for v in row] for row in a]


def _layout(title: str, height: int, **kw) -> dict:
    return base_layout((60, 10, 60, 40), title=dict(text=escape(title)), height=height, plot_bgcolor="white", **kw)


def _ticks(names: list[str]) -> dict:
    return dict(tickmode="array", tickvals=list(range(len(names))), ticktext=[escape(n) for n in names])


def token_matrix(
    M: np.ndarray,
    tokens: list[str],
    title: str,
    labels: Labels = Labels(),
    height: int | None = None,
    col_offset: int = 0,
) -> go.Figure:
    """(T, n) values, one row per token (Q, K, V, a head's output, FFN activations): a diverging heatmap centred at
    0; hover "token · feature j: value". Columns are numbered from `col_offset`."""
    M = np.asarray(M)
    T, n = M.shape
    rows = axis_labels(tokens)
    lim = float(np.nanmax(np.abs(M))) if M.size else 1.0
    data = [
        dict(
            type="heatmap",
            z=_plain(M),
            x=list(range(col_offset, col_offset + n)),
            y=list(range(T)),
            colorscale="RdBu",
            reversescale=True,
            zmid=0,
            zmin=-lim,
            zmax=lim,
            colorbar=dict(thickness=10),
            customdata=[[rows[i]] * n for i in range(T)],
            hovertemplate=f"%{{customdata}} · {escape(labels.feature)} %{{x}}: %{{z:.4f}}<extra></extra>",
        )
    ]
    return go.Figure(
        dict(
            data=data,
            layout=_layout(
                title,
                height or 120 + 22 * T,
                xaxis=dict(title=dict(text=escape(labels.feature))),
                yaxis=dict(autorange="reversed", **_ticks(tokens)),
            ),
        )
    )


def pair_matrix(
    M: np.ndarray,
    tokens: list[str],
    title: str,
    labels: Labels = Labels(),
    keep: np.ndarray | None = None,
    probabilities: bool = False,
) -> go.Figure:
    """(T, T) query x key values (scores or softmax weights); cells not in `keep` are masked: left out of the colour
    scale and drawn grey and hatched. Probabilities on a white-to-blue scale from 0, scores diverging at 0."""
    M = np.asarray(M, dtype=np.float64)
    T = len(tokens)
    mask = np.zeros((T, T), dtype=bool) if keep is None else ~np.asarray(keep, dtype=bool)
    z = np.where(mask, np.nan, M)
    names = axis_labels(tokens)
    finite = z[np.isfinite(z)]
    lim = float(np.abs(finite).max()) if finite.size else 1.0
    scale = (
        dict(colorscale="Blues", zmin=0, zmax=max(lim, 1e-6))
        if probabilities
        else dict(colorscale="RdBu", reversescale=True, zmid=0, zmin=-lim, zmax=lim)
    )
    data = [
        dict(
            type="heatmap",
            z=_plain(z),
            x=list(range(T)),
            y=list(range(T)),
            hoverongaps=False,
            customdata=[[[names[i], names[j]] for j in range(T)] for i in range(T)],
            colorbar=dict(thickness=10),
            hovertemplate="%{customdata[0]} → %{customdata[1]}<br>%{z:.4f}<extra></extra>",
            **scale,
        )
    ]
    if mask.any():
        data += masked_traces(mask, [(0.0, 0.0)], T, labels.masked)
    return go.Figure(
        dict(
            data=data,
            layout=_layout(
                title,
                160 + 24 * T,
                xaxis=dict(side="top", **_ticks(tokens)),
                yaxis=dict(title=dict(text=escape(labels.from_to)), autorange="reversed", **_ticks(tokens)),
            ),
        )
    )


def norms_figure(parts: dict[str, np.ndarray], tokens: list[str], title: str, labels: Labels = Labels()) -> go.Figure:
    """Grouped bars: the length of each (T, D) part per token (the block's input, what attention adds, what the
    FFN adds, the output): how much each sub-layer writes into the residual stream."""
    names = axis_labels(tokens)
    data = [
        dict(
            type="bar",
            name=escape(name),
            x=names,
            marker=dict(color=PALETTE[k % len(PALETTE)]),
            y=[round(float(v), 4) for v in norms(np.asarray(M, dtype=np.float64))],
            hovertemplate=f"%{{x}} · {escape(name)}: %{{y:.3f}}<extra></extra>",
        )
        for k, (name, M) in enumerate(parts.items())
    ]
    return go.Figure(
        dict(
            data=data,
            layout=_layout(
                title,
                360,
                barmode="group",
                yaxis=dict(title=dict(text=escape(labels.norm))),
                legend=dict(orientation="h", y=-0.2),
            ),
        )
    )


def rotary_figure(scores: np.ndarray, title: str, labels: Labels = Labels()) -> go.Figure:
    """The score of one fixed q, k pair against the distance between them (rotary positions): a line, with the
    unrotated score (distance 0) as a dashed reference."""
    s = [round(float(v), 5) for v in scores]
    data = [
        dict(
            type="scatter",
            mode="lines+markers",
            x=list(range(len(s))),
            y=s,
            line=dict(color=PALETTE[1]),
            name=escape(labels.score),
            hovertemplate=f"{escape(labels.distance)} %{{x}}: %{{y:.4f}}<extra></extra>",
        ),
        dict(
            type="scatter",
            mode="lines",
            x=[0, len(s) - 1],
            y=[s[0], s[0]],
            name=escape(labels.unrotated),
            line=dict(color="#7f7f7f", dash="dash"),
            hoverinfo="skip",
        ),
    ]
    return go.Figure(
        dict(
            data=data,
            layout=_layout(
                title,
                360,
                xaxis=dict(title=dict(text=escape(labels.distance))),
                yaxis=dict(title=dict(text=escape(labels.score))),
                legend=dict(orientation="h", y=-0.25),
            ),
        )
    )


def position_table(table: np.ndarray, title: str, labels: Labels = Labels()) -> go.Figure:
    """(positions, dim) position vectors (the sinusoidal table, or a model's learned one) as a heatmap."""
    table = np.asarray(table)
    P, d = table.shape
    data = [
        dict(
            type="heatmap",
            z=_plain(table),
            x=list(range(d)),
            y=list(range(P)),
            colorscale="RdBu",
            reversescale=True,
            zmid=0,
            colorbar=dict(thickness=10),
            hovertemplate=f"{escape(labels.position)} %{{y}} · {escape(labels.feature)} %{{x}}: %{{z:.3f}}"
            "<extra></extra>",
        )
    ]
    return go.Figure(
        dict(
            data=data,
            layout=_layout(
                title,
                380,
                xaxis=dict(title=dict(text=escape(labels.feature))),
                yaxis=dict(title=dict(text=escape(labels.position)), autorange="reversed"),
            ),
        )
    )

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
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import plotly.graph_objects as go

from ..vecmath import EPS, cosine
from .common import base_layout, escape

SPECIALS = ("[CLS]", "[SEP]")
HEAD_COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
               "#bcbd22", "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd"]


def axis_labels(tokens: list[str]) -> list[str]:
    """Unique axis labels ("3 很") so repeated characters do not merge on a categorical axis."""
    return [f"{i} {escape(t)}" for i, t in enumerate(tokens)]


# -- numbers ---------------------------------------------------------------------------
def keep_indices(tokens: list[str], hide_specials: bool) -> list[int]:
    """Indices of tokens to show: all, or all but [CLS]/[SEP] (never an empty list)."""
    if not hide_specials:
        return list(range(len(tokens)))
    keep = [i for i, t in enumerate(tokens) if t not in SPECIALS]
    return keep or list(range(len(tokens)))


def renormalize(att: np.ndarray, keep: list[int]) -> np.ndarray:
    """Attention restricted to the `keep` tokens (rows and columns), rows renormalised to sum to 1.

    Works on any array whose last two axes are (T, T). A row whose kept mass is 0 becomes uniform.
    """
    a = np.asarray(att, dtype=np.float64)[..., keep, :][..., keep]  # (..., K, K)
    s = a.sum(axis=-1, keepdims=True)
    k = a.shape[-1]
    out = np.where(s > EPS, a / np.maximum(s, EPS), 1.0 / max(k, 1))
    return out.astype(np.float32)


def visible(att: np.ndarray, tokens: list[str], segment_ids: list[int] | None, hide_specials: bool):
    """What the views show: (attention, tokens, segment ids, kept indices), without [CLS]/[SEP] and with rows
    renormalised when `hide_specials`, else everything unchanged."""
    keep = keep_indices(tokens, hide_specials)
    shown = renormalize(att, keep) if hide_specials else att
    return shown, [tokens[i] for i in keep], ([segment_ids[i] for i in keep] if segment_ids else None), keep


def row_entropy(att: np.ndarray) -> np.ndarray:
    """Entropy (bits) of each attention row; last axis is the distribution."""
    p = np.clip(np.asarray(att, dtype=np.float64), 0.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = -np.where(p > 0, p * np.log2(p), 0.0).sum(axis=-1)
    return h


def head_summaries(att: np.ndarray, tokens: list[str], causal: bool = False) -> list[dict]:
    """One row per (layer, head): mean row entropy (bits), share of attention on [CLS], [SEP], the previous,
    the next and the same token, and a short label of what the head mostly does.

    Shares are means over the non-special "from" tokens (Clark et al. 2019 average over all tokens; the
    specials' own rows mostly attend to themselves and would blur the picture). With `causal`, row i can
    only spread over its i + 1 visible tokens, so "max_entropy" is the mean of log2(i + 1) over the rows
    (the "next" share is 0 by construction).
    """
    att = np.asarray(att, dtype=np.float64)
    n_layers, n_heads, T, _ = att.shape
    cls_idx = [i for i, t in enumerate(tokens) if t == "[CLS]"]
    sep_idx = [i for i, t in enumerate(tokens) if t == "[SEP]"]
    rows_idx = [i for i, t in enumerate(tokens) if t not in SPECIALS] or list(range(T))
    prev_pairs = [(i, i - 1) for i in rows_idx if i - 1 >= 0 and tokens[i - 1] not in SPECIALS]
    next_pairs = [(i, i + 1) for i in rows_idx if i + 1 < T and tokens[i + 1] not in SPECIALS]
    if causal:
        max_h = float(np.mean([np.log2(i + 1) for i in rows_idx]))
    else:
        max_h = float(np.log2(T)) if T > 1 else 0.0
    out = []
    for layer in range(n_layers):
        for head in range(n_heads):
            a = att[layer, head]  # (T, T)
            r = a[rows_idx]  # (R, T)
            d = {
                "layer": layer + 1,
                "head": head + 1,
                "entropy": float(row_entropy(r).mean()),
                "max_entropy": max_h,
                "cls": float(r[:, cls_idx].sum(axis=1).mean()) if cls_idx else 0.0,
                "sep": float(r[:, sep_idx].sum(axis=1).mean()) if sep_idx else 0.0,
                # averaged over the same rows as the other shares (0 where the neighbour is a special token),
                # so prev + next + self + cls + sep never exceeds 1
                "prev": float(sum(a[i, j] for i, j in prev_pairs) / len(rows_idx)),
                "next": float(sum(a[i, j] for i, j in next_pairs) / len(rows_idx)),
                "self": float(np.mean([a[i, i] for i in rows_idx])),
            }
            d["kind"] = head_kind(d)
            out.append(d)
    return out


def head_kind(d: dict) -> str:
    """A short label for a head summary: the pattern holding at least half of the attention, else broad/focused."""
    best = max(("prev", "next", "self", "sep", "cls"), key=lambda k: d[k])
    if d[best] >= 0.5:
        return {"prev": "previous char", "next": "next char", "self": "self", "sep": "[SEP]", "cls": "[CLS]"}[best]
    if d["max_entropy"] > 0 and d["entropy"] >= 0.8 * d["max_entropy"]:
        return "broad"
    return "mixed"


class AxisLabels(NamedTuple):
    """The attention charts' tick and axis text and the head kinds of head_kind (already translated by the page);
    `layer_n` and `head_n` are formatted with n = the layer's or head's number (from 1)."""
    layer_n: str = "layer {n}"
    head_n: str = "head {n}"
    from_to: str = "from ↓  to →"
    layer: str = "layer"
    drift_y: str = "cos({w}_layer, {w}_0)"  # the drift chart's y axis; w = the word
    kind_prev: str = "previous char"
    kind_next: str = "next char"
    kind_self: str = "self"
    kind_sep: str = "[SEP]"
    kind_cls: str = "[CLS]"
    kind_broad: str = "broad"
    kind_mixed: str = "mixed"


_KIND_FIELDS = {"previous char": "kind_prev", "next char": "kind_next", "self": "kind_self", "[SEP]": "kind_sep",
                "[CLS]": "kind_cls", "broad": "kind_broad", "mixed": "kind_mixed"}


def kind_label(kind: str, labels: AxisLabels = AxisLabels()) -> str:
    """The text of a head kind (head_kind's value) in `labels`."""
    return getattr(labels, _KIND_FIELDS[kind]) if kind in _KIND_FIELDS else kind


METRICS = ("entropy", "sep", "cls", "prev", "next", "self")  # the head-summary metrics, in the page's order
CAUSAL_METRICS = ("entropy", "cls", "prev", "self")  # a left-to-right model has no [SEP] and never looks at the next


def metrics_for(causal: bool) -> tuple[str, ...]:
    """The head-summary metrics worth showing: a causal model's "next" and "[SEP]" shares are 0 by construction."""
    return CAUSAL_METRICS if causal else METRICS


def summary_table(rows: list[dict], metric_names: dict[str, str], columns: tuple[str, str, str],
                  labels: AxisLabels = AxisLabels()) -> list[dict]:
    """Head summaries as table rows: (layer, head, kind) under the `columns` headers, then each metric of
    `metric_names` (key -> header) rounded to 3 decimals; the kinds named by `labels`."""
    return [{columns[0]: r["layer"], columns[1]: r["head"], columns[2]: kind_label(r["kind"], labels),
             **{name: round(r[k], 3) for k, name in metric_names.items()}} for r in rows]


def mean_heads(att_layer: np.ndarray, heads: list[int]) -> np.ndarray:
    """(T, T): one layer's attention averaged over the 1-based `heads` (over all heads when none is chosen)."""
    a = np.asarray(att_layer)
    return a[[h - 1 for h in heads]].mean(0) if heads else a.mean(0)


def keep_columns(rows: np.ndarray, keep: list[int]) -> np.ndarray:
    """Each row restricted to the `keep` columns and renormalised to sum to 1 (an all-zero row stays 0)."""
    r = np.asarray(rows)[:, keep]
    return r / np.maximum(r.sum(1, keepdims=True), EPS)


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


def word_attention(att: np.ndarray, idx: list[int]) -> np.ndarray:
    """(n_layers, T): attention from the word made of tokens `idx` to every token, averaged over heads
    and over the word's tokens."""
    a = np.asarray(att, dtype=np.float64)[:, :, idx, :]  # (L, H, |idx|, T)
    return a.mean(axis=(1, 2)).astype(np.float32)


def drift_from_layer0(layers: np.ndarray, idx: list[int]) -> np.ndarray:
    """(n_layers,): cosine between the word's vector (mean over `idx`) at each layer and at layer 0."""
    v = np.asarray(layers, dtype=np.float64)[:, idx, :].mean(axis=1)  # (L+1, H)
    return np.array([cosine(x, v[0]) for x in v], dtype=np.float32)


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
    return [dict(type="heatmap", z=grey, colorscale=[[0, MASKED_FILL], [1, MASKED_FILL]], zmin=0, zmax=1,
                 showscale=False, name="masked", **(dict(hovertemplate=f"{escape(label)}<extra></extra>") if label
                                                     else dict(hoverinfo="skip"))),
            dict(type="scatter", x=xs, y=ys, mode="lines", fill="toself", name="masked", showlegend=False,
                 line=dict(color=MASKED_LINE, width=1), fillcolor="rgba(0,0,0,0)", hoverinfo="skip",
                 fillpattern=dict(shape="/", fgcolor=MASKED_LINE, bgcolor="rgba(0,0,0,0)", size=6, solidity=0.15))]


def attention_heatmap(a: np.ndarray, tokens: list[str], title: str = "", height: int = 420, causal: bool = False,
                      masked_label: str = "masked", labels: AxisLabels = AxisLabels()) -> go.Figure:
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
    ticks = dict(tickmode="array", tickvals=list(range(n)), ticktext=[escape(t) for t in tokens], tickfont=dict(size=11))
    data = [dict(type="heatmap", z=z, x=list(range(n)), y=list(range(n)), colorscale="Blues", zmin=0,
                 zmax=max(zmax, 1e-6), customdata=[[[tok[i], tok[j]] for j in range(n)] for i in range(n)],
                 hovertemplate="%{customdata[0]} → %{customdata[1]}<br>%{z:.3f}<extra></extra>", hoverongaps=False,
                 colorbar=dict(thickness=10))]
    if causal:
        data += masked_traces(mask, [(0.0, 0.0)], n, masked_label)
    return go.Figure(dict(
        data=data,
        layout=base_layout((50, 10, 110, 10), xaxis=dict(side="top", **ticks),
                           yaxis=dict(title=dict(text=escape(labels.from_to)), autorange="reversed", **ticks),
                           title=dict(text=escape(title), y=0.995, yanchor="top"), height=height + 30, plot_bgcolor="white")))


def model_view(att: np.ndarray, tokens: list[str], selected: tuple[int, int] | None = None,
               cell_px: int = 110, causal: bool = False, labels: AxisLabels = AxisLabels()) -> go.Figure:
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
            big[r0:r0 + T, c0:c0 + T] = np.where(causal_mask(T), np.nan, att[layer, h]) if causal else att[layer, h]
    zmax = float(np.nanmax(big)) if att.size else 1.0  # one scale for all tiles, so heads compare
    fig = go.Figure(go.Heatmap(z=big, colorscale="Blues", zmin=0, zmax=max(zmax, 1e-6), showscale=False, hoverinfo="skip"))
    cx, cy, cd = [], [], []
    for layer in range(n_layers):
        for h in range(n_heads):
            cx.append(h * size + (T - 1) / 2)
            cy.append(layer * size + (T - 1) / 2)
            cd.append([layer + 1, h + 1])
    fig.add_trace(go.Scatter(x=cx, y=cy, mode="markers", customdata=cd,
                             marker=dict(size=max(8, cell_px // 2), opacity=0.0, symbol="square"),
                             hovertemplate=escape(labels.layer_n).format(n="%{customdata[0]}") + ", "
                             + escape(labels.head_n).format(n="%{customdata[1]}") + "<extra></extra>",
                             showlegend=False))
    if causal:
        masked = np.zeros(big.shape, dtype=bool)
        for layer in range(n_layers):
            for h in range(n_heads):
                masked[layer * size:layer * size + T, h * size:h * size + T] = causal_mask(T)
        for tr in masked_traces(masked, [(h * size, layer * size) for layer in range(n_layers) for h in range(n_heads)],
                                T, None):
            fig.add_trace(tr)
    if selected is not None:
        layer, h = selected[0] - 1, selected[1] - 1
        if 0 <= layer < n_layers and 0 <= h < n_heads:
            fig.add_shape(type="rect", x0=h * size - 0.5 - gap / 3, x1=h * size + T - 0.5 + gap / 3,
                          y0=layer * size - 0.5 - gap / 3, y1=layer * size + T - 0.5 + gap / 3,
                          line=dict(color="#d62728", width=3))
    fig.update_xaxes(tickmode="array", tickvals=[h * size + (T - 1) / 2 for h in range(n_heads)],
                     ticktext=[escape(labels.head_n.format(n=h + 1)) for h in range(n_heads)], side="top", showgrid=False, zeroline=False)
    fig.update_yaxes(tickmode="array", tickvals=[layer * size + (T - 1) / 2 for layer in range(n_layers)],
                     ticktext=[escape(labels.layer_n.format(n=layer + 1)) for layer in range(n_layers)], autorange="reversed",
                     showgrid=False, zeroline=False, scaleanchor="x")
    fig.update_layout(**base_layout((60, 10, 40, 10), height=min(1400, 60 + cell_px * n_layers), plot_bgcolor="white",
                                    dragmode=False))
    return fig


def head_summary_figure(rows: list[dict], n_layers: int, n_heads: int, metric: str, title: str = "",
                        labels: AxisLabels = AxisLabels()) -> go.Figure:
    """A layers x heads heatmap of one head-summary metric (entropy, cls, sep, prev, next, self); hover: the kind."""
    z = np.zeros((n_layers, n_heads), dtype=np.float32)
    kinds = [["" for _ in range(n_heads)] for _ in range(n_layers)]
    for r in rows:
        z[r["layer"] - 1, r["head"] - 1] = r[metric]
        kinds[r["layer"] - 1][r["head"] - 1] = kind_label(r["kind"], labels)
    zmax = max((r["max_entropy"] for r in rows), default=1.0) if metric == "entropy" else 1.0
    fig = go.Figure(go.Heatmap(
        z=z, x=[escape(labels.head_n.format(n=h + 1)) for h in range(n_heads)],
        y=[escape(labels.layer_n.format(n=layer + 1)) for layer in range(n_layers)],  # "头 1", "第 1 层" in zh
        colorscale="Viridis", zmin=0, zmax=zmax, customdata=kinds, texttemplate="%{z:.2f}",
        hovertemplate="%{y} %{x}: %{z:.3f}<br>%{customdata}<extra></extra>", colorbar=dict(thickness=10)))
    fig.update_yaxes(autorange="reversed")
    fig.update_layout(**base_layout((60, 10, 40, 10), title=title, height=80 + 34 * n_layers))
    return fig


def word_attention_figure(wa: np.ndarray, tokens: list[str], word: str, title: str = "",
                          labels: AxisLabels = AxisLabels()) -> go.Figure:
    """Layers x context tokens: where the word looks in each layer (mean over heads and its characters)."""
    n_layers, T = wa.shape
    tok = axis_labels(tokens)
    fig = go.Figure(go.Heatmap(
        z=wa, x=list(range(T)), y=[escape(labels.layer_n.format(n=layer + 1)) for layer in range(n_layers)], colorscale="Oranges",
        zmin=0, customdata=[tok[:T] for _ in range(n_layers)],
        hovertemplate=f"{escape(word)} → %{{customdata}}<br>%{{y}}: %{{z:.3f}}<extra></extra>",
        colorbar=dict(thickness=10)))
    # The token labels sit under the map: with sentence B they are many and turn vertical, and above the map they ran
    # into the title. The bottom margin grows with the longest label ([SEP]: 5 characters).
    room = 14 + 9 * max((len(t) for t in tokens), default=1) if T > 12 else 30
    fig.update_xaxes(tickmode="array", tickvals=list(range(T)), ticktext=[escape(t) for t in tokens], side="bottom",
                     automargin=True)
    fig.update_yaxes(autorange="reversed")
    fig.update_layout(**base_layout((60, 10, 50, room), title=escape(title), height=70 + room + 36 * n_layers))
    return fig


def drift_figure(cos: np.ndarray, layer_names: list[str], word: str, title: str = "",
                 labels: AxisLabels = AxisLabels()) -> go.Figure:
    """Cosine of the word's vector at each layer with its layer-0 (context-free) vector."""
    x = list(range(len(cos)))
    w = escape(word)
    return go.Figure(dict(
        data=[dict(type="scatter", x=x, y=[float(c) for c in cos], mode="lines+markers+text", text=[f"{c:.2f}" for c in cos],
                   textposition="top center", customdata=[escape(n) for n in layer_names],
                   hovertemplate="%{customdata}: cos = %{y:.3f}<extra></extra>", line=dict(color="#d62728"))],
        layout=base_layout((60, 10, 40, 10), xaxis=dict(tickmode="array", tickvals=x, ticktext=[escape(n) for n in layer_names],
                                                       title=dict(text=escape(labels.layer))),
                           yaxis=dict(title=dict(text=escape(labels.drift_y).format(w=w)),
                                      range=[min(0.0, float(np.min(cos)) - 0.05), 1.08]),
                           title=dict(text=escape(title)), height=330)))


def word_token_indices(spans: list[tuple[int, int]], tokens: list[str], text: str, word: str) -> list[int]:
    """Indices of the (non-special) tokens covering the first occurrence of `word` in `text`; [] if absent."""
    from ..tokens import find_all

    found = find_all(text, word) if word else []
    if not found:
        return []
    a, b = found[0]
    return [i for i, (s, e) in enumerate(spans) if e > s and s < b and e > a and tokens[i] not in SPECIALS]

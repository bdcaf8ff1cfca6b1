"""The explorer's plots (type vs token, polysemy atlas): type/token maps, similarity heatmaps,
per-layer charts and the atlas map (the home demo's margin chart: viz/margin.py).

Hover text shows the sentence with the target word in 【】 brackets; user text goes through
`common.escape` before it reaches Plotly.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from .common import CJK_FONT, PALETTE, SpecFigure, base_layout, escape

TYPE_COLOUR = "#111111"
# one colour and marker per model, the same in every chart whichever models are shown (others: the palette)
MODEL_COLOURS = {"word2vec": PALETTE[0], "elmo": PALETTE[1], "bert": PALETTE[2], "gpt": PALETTE[3]}
MODEL_SYMBOLS = {"word2vec": "circle", "elmo": "square", "bert": "diamond", "gpt": "triangle-up"}


def model_colour(model: str, i: int) -> str:
    """`model`'s fixed colour, or (an unknown model, the i-th shown) one of the palette's other colours."""
    rest = [c for c in PALETTE if c not in MODEL_COLOURS.values()]
    return MODEL_COLOURS.get(model, rest[i % len(rest)])


def _wrap(text: str, width: int) -> list[str]:
    return [text[i : i + width] for i in range(0, len(text), width)] or [""]


def mark_word(text: str, start: int, end: int, max_len: int = 90, width: int = 30) -> str:
    """Hover text: `text` with text[start:end] in 【】, shortened around the word, escaped, wrapped with <br>."""
    text = str(text)
    start, end = max(0, min(start, len(text))), max(0, min(end, len(text)))
    if end < start:
        start, end = end, start
    left, word, right = text[:start], text[start:end], text[end:]
    room = max(0, max_len - len(word))
    if len(left) + len(right) > room:
        keep_left = min(len(left), room // 2)
        keep_right = min(len(right), room - keep_left)
        keep_left = min(len(left), room - keep_right)
        left = ("…" + left[len(left) - keep_left :]) if keep_left < len(left) else left
        right = (right[:keep_right] + "…") if keep_right < len(right) else right
    marked = left + "【" + word + "】" + right
    return "<br>".join(escape(line) for line in _wrap(marked, width))


def short_label(text: str, n: int = 10) -> str:
    text = str(text)
    return text if len(text) <= n else text[:n] + "…"


def chart_layout(title: str, height: int, legend_y: float = -0.08, wrap: int | None = None) -> dict:
    """Title, size, fonts and legend; `wrap`: a title longer than this many characters breaks at its " · "s
    (plots side by side in narrow columns, where Plotly would cut it off; room for two lines in each, so they align)."""
    text = escape(title)
    if wrap and len(title) > wrap and " · " in title:
        text = "<br>".join(escape(part) for part in title.split(" · "))
    return base_layout(
        (10, 10, 63 if wrap else 45, 10),
        hover=True,
        height=height,
        legend=dict(orientation="h", y=legend_y),
        title=dict(text=text, x=0.0, xanchor="left", font=dict(size=15)),
    )


def _base_layout(
    fig: go.Figure, title: str, height: int, legend_y: float = -0.08, wrap: int | None = None
) -> go.Figure:
    """`fig` with `chart_layout`'s title, size, fonts and legend."""
    fig.update_layout(**chart_layout(title, height, legend_y, wrap))
    return fig


def spec_figure(data: list[dict], layout: dict) -> go.Figure:
    """A figure of plain-dict traces and layout, without Plotly's per-property validation (5-80 ms a figure) and
    built only when asked for more than its dict (common.SpecFigure): most of a page's first run with new sentences
    went into figures. tests/test_viz_explorer.py checks that each builder's output passes validation
    (go.Figure(fig.to_dict()))."""
    return SpecFigure(data, layout)


def _colour_map(values) -> dict:
    cats = []
    for v in values:
        if v not in cats:
            cats.append(v)
    return {c: PALETTE[i % len(PALETTE)] for i, c in enumerate(cats)}


def type_token_map(
    coords,
    hover: list[str],
    labels=None,
    type_hover: str = "",
    title: str = "",
    type_name: str = "type",
    token_name: str = "token",
    height: int = 420,
) -> go.Figure:
    """One model's map: row 0 of `coords` is the type vector (★), rows 1.. are its tokens.

    Lines join the type point to each token. `hover[i]` is the (already marked and escaped) text of token i;
    `labels[i]` (optional) colours the tokens by sense.
    """
    P = np.asarray(coords, dtype=float)
    if P.ndim != 2 or P.shape[1] != 2 or len(P) < 1:
        raise ValueError(f"coords must be (1 + n_tokens, 2), got {P.shape}")
    T = P[1:]
    if len(hover) != len(T):
        raise ValueError("one hover text per token is needed")
    labels = list(labels) if labels is not None else [None] * len(T)
    lx, ly = [], []
    for x, y in T:
        lx += [P[0, 0], x, None]
        ly += [P[0, 1], y, None]
    # traces and layout as plain dicts, validated once by go.Figure (half the time of add_trace/update_* calls)
    data = [
        dict(
            type="scatter",
            x=lx,
            y=ly,
            mode="lines",
            line=dict(color="rgba(120,120,120,0.35)", width=1),
            hoverinfo="skip",
            showlegend=False,
        )
    ]
    for lab, col in _colour_map(labels).items():
        idx = [i for i, v in enumerate(labels) if v == lab]
        name = escape(lab) if lab is not None else token_name
        data.append(
            dict(
                type="scatter",
                x=T[idx, 0],
                y=T[idx, 1],
                mode="markers",
                name=name,
                marker=dict(size=11, color=col, line=dict(width=1, color="white"), opacity=0.9),
                text=[hover[i] for i in idx],
                hovertemplate="%{text}<extra>" + name + "</extra>",
            )
        )
    data.append(
        dict(
            type="scatter",
            x=[P[0, 0]],
            y=[P[0, 1]],
            mode="markers",
            name=escape(type_name),
            marker=dict(symbol="star", size=20, color=TYPE_COLOUR, line=dict(width=1, color="white")),
            text=[type_hover or escape(type_name)],
            hovertemplate="%{text}<extra></extra>",
        )
    )
    layout = dict(
        xaxis=dict(showticklabels=False, zeroline=False),
        yaxis=dict(showticklabels=False, zeroline=False, scaleanchor="x", scaleratio=1),
        **chart_layout(title, height, wrap=24),
    )  # four models: four narrow columns
    if len(T) and np.allclose(T, P[0], atol=1e-9 * (1 + float(np.abs(P).max()))):
        layout["annotations"] = [
            dict(
                x=P[0, 0], y=P[0, 1], text=f"×{len(T)}", showarrow=True, arrowhead=0, ax=28, ay=-22, font=dict(size=13)
            )
        ]  # every token sits on the type point (word2vec)
    return spec_figure(data, layout)


def similarity_heatmap(
    S,
    names: list[str],
    hover: list[str] | None = None,
    title: str = "",
    labels: list | None = None,
    height: int = 420,
    zmin: float | None = None,
) -> go.Figure:
    """Cosine-similarity matrix of n token vectors. Axes show the sentence number (and its label, if any);
    the full sentences (`hover`, escaped) are in the hover text, so a narrow column still has room for the cells.
    `zmin`: the colour scale's bottom (give heatmaps shown side by side the same one); default: this matrix's minimum."""
    S = np.asarray(S, dtype=float)
    n = len(names)
    if S.shape != (n, n):
        raise ValueError(f"S must be ({n}, {n}), got {S.shape}")
    hover = hover or [escape(x) for x in names]
    custom = [[f"{i + 1}. {hover[i]}<br>↔<br>{j + 1}. {hover[j]}" for j in range(n)] for i in range(n)]
    labels = labels if labels is not None and any(labels) else [None] * n
    axis = [f"{i + 1} {escape(short_label(lab, 4))}" if lab else f"{i + 1}" for i, lab in enumerate(labels)]
    lo = float(np.nanmin(S)) if n else 0.0
    show = n <= 8  # numbers in the cells only while they fit
    return spec_figure(
        data=[
            dict(
                type="heatmap",
                z=S,
                x=axis,
                y=axis,
                customdata=custom,
                zmin=min(lo, 0.99) if zmin is None else zmin,
                zmax=1.0,
                colorscale="Viridis",
                hovertemplate="%{customdata}<br>cos = %{z:.3f}<extra></extra>",
                text=np.round(S, 2) if show else None,
                texttemplate="%{text}" if show else None,
                textfont=dict(size=9),
                colorbar=dict(thickness=10),
            )
        ],
        layout=dict(
            yaxis=dict(autorange="reversed", tickfont=dict(size=10), type="category"),
            xaxis=dict(tickangle=-60, tickfont=dict(size=10), type="category"),
            **chart_layout(title, height),
        ),
    )


def layer_accuracy_chart(
    results: dict[str, tuple[list[str], list[float]]],
    chance: float | None = None,
    title: str = "",
    x_title: str = "layer",
    y_title: str = "accuracy",
    height: int = 340,
    chance_fmt: str = "majority {p:.2f}",
) -> go.Figure:
    """Leave-one-out sense accuracy per layer: {model: (layer names, accuracies)}; one line per model; the majority
    line labelled `chance_fmt` (with p)."""
    data = [
        dict(
            type="scatter",
            x=list(range(len(accs))),
            y=list(accs),
            mode="lines+markers",
            name=escape(model),
            text=[escape(n) for n in names],
            line=dict(color=model_colour(model, i)),
            marker=dict(
                size=max(8, 14 - 2 * i), color=model_colour(model, i), symbol=MODEL_SYMBOLS.get(model, "circle")
            ),
            hovertemplate=escape(model) + " · %{text}<br>%{y:.2f}<extra></extra>",
        )
        for i, (model, (names, accs)) in enumerate(results.items())
    ]
    layout = dict(
        yaxis=dict(range=[0, 1.05], title=dict(text=y_title)),
        xaxis=dict(title=dict(text=x_title), dtick=1),
        **chart_layout(title, height, legend_y=-0.3),
    )
    if chance is not None:  # what fig.add_hline(y=chance, annotation_position="bottom right") writes
        layout["shapes"] = [
            dict(
                type="line",
                x0=0,
                x1=1,
                xref="x domain",
                y0=chance,
                y1=chance,
                yref="y",
                line=dict(dash="dot", color="grey"),
            )
        ]
        layout["annotations"] = [
            dict(
                text=escape(chance_fmt.format(p=chance)),
                showarrow=False,
                x=1,
                xanchor="right",
                xref="x domain",
                y=chance,
                yanchor="top",
                yref="y",
            )
        ]
    return spec_figure(data, layout)


def self_similarity_chart(
    results: dict[str, tuple[list[str], list[float], list[float]]],
    title: str = "",
    self_name: str = "self-similarity",
    base_name: str = "baseline (random tokens)",
    x_title: str = "layer",
    height: int = 380,
) -> go.Figure:
    """{model: (layer names, self-similarity per layer, anisotropy baseline per layer)}: per model one colour and marker,
    self-similarity solid and the baseline dotted. The legend names each model once (a click hides both of its lines)
    and keys the two line styles, so it stays short with three or four models."""
    fig = go.Figure()
    for i, (model, (names, selfsim, base)) in enumerate(results.items()):
        col, sym, m = model_colour(model, i), MODEL_SYMBOLS.get(model, "circle"), escape(model)
        x, txt = list(range(len(names))), [escape(n) for n in names]
        for what, y, dash, show in ((self_name, selfsim, "solid", True), (base_name, base, "dot", False)):
            fig.add_trace(
                go.Scatter(
                    x=x,
                    y=list(y),
                    mode="lines+markers",
                    name=m,
                    legendgroup=m,
                    showlegend=show,
                    line=dict(color=col, dash=dash),
                    marker=dict(symbol=sym, size=8, color=col),
                    text=txt,
                    hovertemplate=f"{m} · %{{text}}<br>{escape(what)} %{{y:.3f}}<extra></extra>",
                )
            )
    for what, dash in ((self_name, "solid"), (base_name, "dot")):  # the key to the line styles
        fig.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                mode="lines",
                name=escape(what),
                legendgroup="_style_" + dash,
                line=dict(color="grey", dash=dash),
                hoverinfo="skip",
            )
        )
    fig.update_yaxes(title="cos", range=[-0.05, 1.05])
    fig.update_xaxes(title=x_title, dtick=1)
    return _base_layout(fig, title, height, legend_y=-0.25)


def atlas_map(
    coords,
    hover: list[str],
    colour_by: list[str],
    title: str = "",
    cluster_words: dict[str, list[str]] | None = None,
    height: int = 560,
) -> go.Figure:
    """Scatter of n occurrences coloured by a category (POS tag, source or cluster).

    `cluster_words`, when given, maps a category to its label words, written at the category's centroid.
    """
    P = np.asarray(coords, dtype=float)
    if P.ndim != 2 or P.shape[1] != 2:
        raise ValueError(f"coords must be (n, 2), got {P.shape}")
    if not (len(P) == len(hover) == len(colour_by)):
        raise ValueError("coords, hover and colour_by differ in length")
    fig = go.Figure()
    cats = _colour_map(colour_by)
    counts = {c: sum(1 for v in colour_by if v == c) for c in cats}
    for cat, col in sorted(cats.items(), key=lambda kv: -counts[kv[0]]):
        idx = [i for i, v in enumerate(colour_by) if v == cat]
        name = f"{escape(cat)} ({len(idx)})"
        fig.add_trace(
            go.Scattergl(
                x=P[idx, 0],
                y=P[idx, 1],
                mode="markers",
                name=name,
                marker=dict(size=7, color=col, opacity=0.8),
                text=[hover[i] for i in idx],
                hovertemplate="%{text}<extra>" + escape(cat) + "</extra>",
            )
        )
        if cluster_words and cluster_words.get(cat):
            cx, cy = np.median(P[idx], axis=0)  # robust to a few far-off points
            fig.add_annotation(
                x=cx,
                y=cy,
                text="<b>" + escape(" · ".join(cluster_words[cat])) + "</b>",
                showarrow=False,
                font=dict(size=13, color=col, family=CJK_FONT),
                bgcolor="rgba(255,255,255,0.75)",
            )
    fig.update_xaxes(showticklabels=False, zeroline=False)
    fig.update_yaxes(showticklabels=False, zeroline=False)
    return _base_layout(fig, title, height)

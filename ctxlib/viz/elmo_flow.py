"""ELMo's architecture drawn with the sentence flowing through it (Plotly figure out; no streamlit): words ->
char-CNN -> highway -> biLSTM layers, forward and backward, then the task's mix for the chosen word (Peters et al.
2018). `split_states` gives the 2L+1 vectors of every token that the drawing and viz/elmo.py's plots show.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ..vecmath import norms
from .common import CJK_FONT, base_layout, escape

FWD, BWD, TOK, OFF = "#1f77b4", "#ff7f0e", "#2ca02c", "#d9d9d9"


def window(n_tokens: int, center: int, size: int = 16) -> tuple[int, int]:
    """[a, b): at most `size` token positions around `center`, for drawing long sentences."""
    if n_tokens <= size:
        return 0, n_tokens
    a = max(0, min(center - size // 2, n_tokens - size))
    return a, a + size


def split_states(layers: np.ndarray) -> dict[str, np.ndarray]:
    """The 2L+1 vectors of every token from encode()'s (L+1, T, 2d) layers.

    Layer 0 is the token layer duplicated (x || x), so x = its first half; layer j >= 1 is
    forward || backward. Returns {"x": (T, d), "f1": (T, d), "b1": ..., "fL", "bL"} in that order.
    """
    layers = np.asarray(layers, dtype=np.float32)
    n, T, D = layers.shape
    d = D // 2
    out = {"x": layers[0, :, :d]}
    for j in range(1, n):
        out[f"f{j}"] = layers[j, :, :d]
        out[f"b{j}"] = layers[j, :, d:]
    return out


# The text the architecture drawing and the vector names need, as labels (already translated) the page passes in:
# token_vector (name of x), words, char_cnn (row labels), forward, backward (the two directions), has_read (hover),
# mix (the task-mix marker), fwd_lm, bwd_lm, off (the legend), window (a template with {first}, {last}, {n}).
ARCH_LABELS = (
    "token_vector",
    "words",
    "char_cnn",
    "forward",
    "backward",
    "has_read",
    "mix",
    "fwd_lm",
    "bwd_lm",
    "off",
    "window",
)


# -- architecture diagram -------------------------------------------------------------------
def _cell(i: int, key: str, dx: float = 0.2, dy: float = 0.17) -> tuple[float, float]:
    """Where the drawing puts the cell of row `key` at position i: forward cells up-left, backward ones down-right."""
    if key == "cnn":
        return i, 1
    if key == "hw":
        return i, 2
    j = int(key[1:])
    return (i - dx, 2 + j + dy) if key[0] == "f" else (i + dx, 2 + j - dy)


def _arrow(notes: list[dict], p, q, color, width=1.2, standoff=9, opacity=1.0):
    notes.append(
        dict(
            x=q[0],
            y=q[1],
            ax=p[0],
            ay=p[1],
            xref="x",
            yref="y",
            axref="x",
            ayref="y",
            text="",
            showarrow=True,
            arrowhead=2,
            arrowsize=1,
            arrowwidth=width,
            arrowcolor=color,
            standoff=standoff,
            startstandoff=standoff,
            opacity=opacity,
        )
    )


def _flow_arrows(notes: list[dict], xs: list[int], w: int, n_lstm: int):
    """The upward flow at every position, then the recurrence along each biLSTM row (coloured where it feeds w)."""
    for i in xs:  # upward flow
        _arrow(notes, (i, 0.15), _cell(i, "cnn"), "#888")
        _arrow(notes, _cell(i, "cnn"), _cell(i, "hw"), "#888")
        _arrow(notes, _cell(i, "hw"), _cell(i, "f1"), "#999" if _feeds(i, "f1", w) else OFF)
        _arrow(notes, _cell(i, "hw"), _cell(i, "b1"), "#999" if _feeds(i, "b1", w) else OFF)
        for j in range(2, n_lstm + 1):
            _arrow(notes, _cell(i, f"f{j - 1}"), _cell(i, f"f{j}"), FWD if _feeds(i, "f1", w) else OFF)
            _arrow(notes, _cell(i, f"b{j - 1}"), _cell(i, f"b{j}"), BWD if _feeds(i, "b1", w) else OFF)
    for j in range(1, n_lstm + 1):  # recurrence
        for i in xs[:-1]:
            _arrow(notes, _cell(i, f"f{j}"), _cell(i + 1, f"f{j}"), FWD if i + 1 <= w else OFF, 1.6)
            _arrow(notes, _cell(i + 1, f"b{j}"), _cell(i, f"b{j}"), BWD if i >= w else OFF, 1.6)


def _cell_traces(
    tokens: list[str], states: dict, xs: list[int], w: int, labels: dict[str, str], row_labels: list[str]
) -> list[dict]:
    """One row of square cells per state (the token layer twice, then each direction of each biLSTM layer); hover
    shows the state's norm and the words it has read."""
    n_lstm = (len(states) - 1) // 2
    read = labels["has_read"]

    def seen(i: int, key: str) -> str:
        ctx = tokens[: i + 1] if key[0] == "f" else (tokens[i:] if key[0] == "b" else [tokens[i]])
        s = " ".join(ctx)
        return escape(s if len(s) <= 60 else (s[:57] + "…"))

    traces = []
    for key in ["cnn", "hw"] + [f"{d}{j}" for j in range(1, n_lstm + 1) for d in "fb"]:
        lengths = norms(states["x"] if key in ("cnn", "hw") else states[key])
        if key in ("cnn", "hw"):
            base, label = TOK, (row_labels[1] if key == "cnn" else row_labels[2])
        else:
            base = FWD if key[0] == "f" else BWD
            label = f"biLSTM {key[1:]} " + ("→ " + labels["forward"] if key[0] == "f" else "← " + labels["backward"])
        pts = [_cell(i, key) for i in xs]
        traces.append(
            dict(
                type="scatter",
                x=[p[0] for p in pts],
                y=[p[1] for p in pts],
                mode="markers",
                showlegend=False,
                marker=dict(
                    symbol="square",
                    size=[24 if i == w else 18 for i in xs],
                    color=[base if _feeds(i, key, w) else OFF for i in xs],
                    line=dict(color="#333", width=[2.5 if i == w else 0.5 for i in xs]),
                ),
                customdata=[[escape(tokens[i]), f"{lengths[i]:.2f}", seen(i, key)] for i in xs],
                hovertemplate=f"{escape(label)} @ %{{customdata[0]}}<br>|h| = %{{customdata[1]}}<br>{read}: %{{customdata[2]}}<extra></extra>",
            )
        )
    return traces


def architecture_figure(
    tokens: list[str], layers: np.ndarray, word_index: int, labels: dict[str, str], max_tokens: int = 14
) -> go.Figure:
    """ELMo drawn with the sentence flowing through it: words -> char-CNN -> highway -> biLSTM 1 -> biLSTM 2,
    forward (left to right, upper cells) and backward (right to left, lower cells), then the task's mix
    for the chosen word.

    Cells that feed the chosen word's vectors are coloured (forward: the words up to it; backward: the
    words from it to the end); the rest are grey. Hover shows each state's norm and the words it has read.
    `labels`: the drawing's text (see ARCH_LABELS).
    """
    states = split_states(layers)
    n_lstm = (len(states) - 1) // 2
    T = len(tokens)
    w = int(np.clip(word_index, 0, T - 1))
    a, b = window(T, w, max_tokens)
    xs = list(range(a, b))
    row_labels = [labels["words"], labels["char_cnn"], "highway → x"]
    row_labels += [f"biLSTM {j}" for j in range(1, n_lstm + 1)]
    top_y = len(row_labels) - 1 + 0.9
    notes: list[dict] = []  # the figure is built from dicts in one go (add_* calls re-validate ~50 ms in all)
    _flow_arrows(notes, xs, w, n_lstm)
    traces = _cell_traces(tokens, states, xs, w, labels, row_labels)
    traces.append(
        dict(
            type="scatter",
            x=xs,
            y=[0] * len(xs),
            mode="text",
            text=[escape(tokens[i]) for i in xs],
            textfont=dict(
                size=[19 if i == w else 15 for i in xs],
                color=["#d62728" if i == w else "#000" for i in xs],
                family=CJK_FONT,
            ),
            hoverinfo="skip",
            showlegend=False,
        )
    )
    traces.append(
        dict(
            type="scatter",
            x=[w],
            y=[top_y],
            mode="markers+text",
            text=[labels["mix"]],
            textposition="top center",
            marker=dict(symbol="diamond", size=24, color="#9467bd"),
            hoverinfo="skip",
            showlegend=False,
        )
    )
    for key in ("hw", f"f{n_lstm}", f"b{n_lstm}"):
        _arrow(notes, _cell(w, key), (w, top_y), "#9467bd", 1.2, 10, 0.7)
    notes.append(
        dict(
            x=a - 0.6,
            y=-0.45,
            xref="x",
            yref="y",
            xanchor="left",
            showarrow=False,
            font=dict(color="#555", size=12),
            text=(
                "<span style='color:%s'>■</span> %s  <span style='color:%s'>■</span> %s  <span style='color:%s'>■</span> %s"
                % (FWD, labels["fwd_lm"], BWD, labels["bwd_lm"], OFF, labels["off"])
            ),
        )
    )
    if a > 0 or b < T:
        note = labels["window"].format(first=a + 1, last=b, n=T)
        notes.append(
            dict(
                x=b - 0.4,
                y=-0.45,
                xref="x",
                yref="y",
                xanchor="right",
                text=note,
                showarrow=False,
                font=dict(color="#888"),
            )
        )
    layout = base_layout(
        (90, 10, 10, 10),
        annotations=notes,
        xaxis=dict(visible=False, range=[a - 0.7, b - 0.3]),
        yaxis=dict(
            tickmode="array",
            tickvals=list(range(len(row_labels))),
            ticktext=[escape(s) for s in row_labels],
            range=[-0.7, top_y + 0.7],
            showgrid=False,
            zeroline=False,
        ),
        height=140 + 80 * len(row_labels),
        plot_bgcolor="white",
        dragmode=False,
    )
    return go.Figure(dict(data=traces, layout=layout))


def _feeds(i: int, key: str, w: int) -> bool:
    """Does the cell (position i, row key) reach the chosen word's vectors?"""
    if key[0] == "f":
        return i <= w
    if key[0] == "b":
        return i >= w
    return True  # every word's token layer feeds one of the two LSTMs that reach the chosen word

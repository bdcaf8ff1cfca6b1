"""Pure plot builders for the fine-tuning page (no streamlit): how a pretrained model is used in a task.

- `cls_head_figure`: BERT with the classification head on [CLS] (Devlin et al. 2019, fig. 4b): tokens -> L encoder
  layers -> h_[CLS] -> tanh pooler -> linear head -> negative / positive;
- `taglm_figure`: TagLM (Peters et al. 2017): a pretrained biLM's states concatenated into a sequence tagger's
  hidden layer, beside this app's "concatenated to hidden" task model (evaluation/heads.py, use="concat");
- `cove_figure`: CoVe (McCann et al. 2017): the encoder of a translation model reused as features.

The live run's plots (loss and accuracy per step, the accuracies) are in viz/transfer_runs.py.

Every text in a figure comes in `labels` (already translated); user text is escaped.
"""

from __future__ import annotations

import plotly.graph_objects as go

from .common import base_layout, escape

BERT_C, HEAD_C, LM_C, TASK_C, GREY, NEG_C, POS_C = (
    "#1f77b4",
    "#d62728",
    "#ff7f0e",
    "#2ca02c",
    "#7f7f7f",
    "#9467bd",
    "#2ca02c",
)

# The text the drawings need (the page passes them translated; {n} and {d} are filled here).
CLS_LABELS = ("tokens", "layer", "attention", "pooler", "head", "neg", "pos", "trained", "probe")
TAGLM_LABELS = (
    "taglm",
    "app",
    "words",
    "char_emb",
    "rnn1",
    "lm",
    "lm_states",
    "concat",
    "rnn2",
    "crf",
    "own_emb",
    "bilstm",
    "elmo_mix",
    "concat_app",
    "linear",
)
COVE_LABELS = (
    "mt",
    "task",
    "src",
    "glove",
    "encoder",
    "decoder",
    "tgt",
    "copy",
    "task_words",
    "task_in",
    "task_model",
    "label",
    "not_here",
)


def _box(x0, y0, x1, y1, text, color, fill_opacity=0.12, font_size=12, dash=None) -> tuple[dict, dict]:
    shape = {
        "type": "rect",
        "x0": x0,
        "y0": y0,
        "x1": x1,
        "y1": y1,
        "layer": "below",
        "line": {"color": color, "width": 1.5, **({"dash": dash} if dash else {})},
        "fillcolor": _rgba(color, fill_opacity),
    }
    note = {
        "x": (x0 + x1) / 2,
        "y": (y0 + y1) / 2,
        "text": text,
        "showarrow": False,
        "xref": "x",
        "yref": "y",
        "font": {"size": font_size, "color": "#222"},
    }
    return shape, note


def _rgba(hex_color: str, alpha: float) -> str:
    h = hex_color.lstrip("#")
    r, g, b = (int(h[i : i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha})"


def _arrow(p, q, color=GREY, width=1.6, text="") -> dict:
    return {
        "x": q[0],
        "y": q[1],
        "ax": p[0],
        "ay": p[1],
        "xref": "x",
        "yref": "y",
        "axref": "x",
        "ayref": "y",
        "text": text,
        "showarrow": True,
        "arrowhead": 2,
        "arrowsize": 1,
        "arrowwidth": width,
        "arrowcolor": color,
    }


def _canvas(shapes, notes, x_range, y_range, height, title=None, traces=()) -> go.Figure:
    layout = base_layout(
        (10, 10, 40 if title else 10, 10),
        shapes=shapes,
        annotations=notes,
        height=height,
        showlegend=False,
        xaxis={"visible": False, "range": list(x_range), "fixedrange": True},
        yaxis={"visible": False, "range": list(y_range), "fixedrange": True},
        plot_bgcolor="white",
    )
    if title:
        layout["title"] = {"text": title, "x": 0.01}
    return go.Figure({"data": list(traces) or [{"type": "scatter", "x": [], "y": []}], "layout": layout})


def cls_head_figure(
    tokens: list[str],
    n_layers: int,
    labels: dict[str, str],
    probs: tuple[float, float] | None = None,
    max_tokens: int = 12,
    title: str | None = None,
) -> go.Figure:
    """BERT's classification head drawn on the architecture: the review's tokens ([CLS] first, [SEP] last) -> the
    n_layers encoder layers (every position attends to every position) -> the top layer's [CLS] vector -> tanh
    pooler -> linear head -> the two classes, with `probs` = (p_negative, p_positive) when a fine-tuned head gave them.

    Fine-tuning trains every weight drawn (the head new, the encoder from its pretrained values); the frozen probe
    trains only a logistic regression on h_[CLS]."""
    toks = list(tokens)
    if len(toks) > max_tokens:  # keep [CLS], the first characters and [SEP]
        toks = toks[: max_tokens - 2] + ["…", toks[-1]]
    n = len(toks)
    shapes, notes, traces = [], [], []
    L = max(1, int(n_layers))
    right = max(n - 1, 5) + 0.6
    for j in range(1, L + 1):
        s, t = _box(-0.45, j - 0.3, n - 0.55, j + 0.3, "", BERT_C, 0.07)
        shapes.append(s)
        notes.append(
            {
                "x": -0.6,
                "y": j,
                "text": labels["layer"].format(n=j),
                "showarrow": False,
                "xanchor": "right",
                "xref": "x",
                "yref": "y",
                "font": {"size": 11, "color": BERT_C},
            }
        )
    xs = [i for i in range(n) for _ in range(L)]
    ys = [j for _ in range(n) for j in range(1, L + 1)]
    colors = [HEAD_C if i == 0 else BERT_C for i in xs]
    traces.append(
        {
            "type": "scatter",
            "mode": "markers",
            "x": xs,
            "y": ys,
            "hoverinfo": "skip",
            "marker": {"size": 13, "symbol": "square", "color": colors, "opacity": 0.85},
        }
    )
    traces.append(
        {
            "type": "scatter",
            "mode": "text",
            "x": list(range(n)),
            "y": [0] * n,
            "text": [escape(t) for t in toks],
            "textfont": {"size": 15, "color": [HEAD_C] + ["#333"] * (n - 1)},
            "hoverinfo": "skip",
        }
    )
    for i in range(n):
        notes.append(_arrow((i, 0.25), (i, 0.7), HEAD_C if i == 0 else GREY, 1.2))
    notes.append(
        {
            "x": -0.6,
            "y": 0,
            "text": labels["tokens"],
            "showarrow": False,
            "xanchor": "right",
            "xref": "x",
            "yref": "y",
            "font": {"size": 11},
        }
    )
    notes.append(
        {
            "x": (n - 1) / 2,
            "y": L + 0.45,
            "text": labels["attention"],
            "showarrow": False,
            "xref": "x",
            "yref": "y",
            "font": {"size": 11, "color": BERT_C},
        }
    )
    # the head, above [CLS]
    py, hy, oy = L + 1.3, L + 2.3, L + 3.4
    s, t = _box(-0.45, py - 0.3, 3.2, py + 0.3, labels["pooler"], HEAD_C)
    shapes.append(s), notes.append(t)
    s, t = _box(-0.45, hy - 0.3, 3.2, hy + 0.3, labels["head"], HEAD_C)
    shapes.append(s), notes.append(t)
    notes.append(_arrow((0, L + 0.25), (0, py - 0.32), HEAD_C, 2.2))
    notes.append(_arrow((1.4, py + 0.3), (1.4, hy - 0.32), HEAD_C, 2.2))
    for k, (key, color, x0) in enumerate((("neg", NEG_C, -0.45), ("pos", POS_C, 1.75))):
        p = None if probs is None else float(probs[k])
        text = labels[key] + ("" if p is None else f"<br>p = {p:.2f}")
        s, t = _box(x0, oy - 0.4, x0 + 1.45, oy + 0.4, text, color, 0.1 if p is None else 0.1 + 0.6 * p)
        shapes.append(s), notes.append(t)
        notes.append(_arrow((1.4, hy + 0.3), (x0 + 0.72, oy - 0.42), color, 1.8))
    notes.append(
        {
            "x": 3.5,
            "y": hy,
            "text": labels["trained"],
            "showarrow": False,
            "xanchor": "left",
            "align": "left",
            "xref": "x",
            "yref": "y",
            "font": {"size": 11, "color": HEAD_C},
        }
    )
    notes.append(
        {
            "x": 3.5,
            "y": py,
            "text": labels["probe"],
            "showarrow": False,
            "xanchor": "left",
            "align": "left",
            "xref": "x",
            "yref": "y",
            "font": {"size": 11, "color": GREY},
        }
    )
    return _canvas(shapes, notes, (-2.2, right + 0.3), (-0.5, oy + 0.6), 130 + 62 * (L + 4), title, traces)


def _stack(x0, x1, rows: list[tuple[float, str, str]], shapes, notes, color_arrows=GREY) -> None:
    """Boxes from x0 to x1 at the given heights, each joined to the next by an arrow."""
    for k, (y, text, color) in enumerate(rows):
        s, t = _box(x0, y - 0.32, x1, y + 0.32, text, color)
        shapes.append(s), notes.append(t)
        if k:
            notes.append(_arrow(((x0 + x1) / 2, rows[k - 1][0] + 0.33), ((x0 + x1) / 2, y - 0.34), color_arrows))


def taglm_figure(labels: dict[str, str]) -> go.Figure:
    """Left: TagLM (Peters et al. 2017) for one word position k: the tagger's own char + word embeddings -> biRNN
    layer 1; a pretrained, frozen bidirectional LM gives h_k^LM = [forward; backward]; the two are concatenated and
    go on to biRNN layer 2 and a CRF. Right: this app's "concatenated to hidden" task model (heads.TaskModel,
    use="concat"): its own word embeddings -> biLSTM, concatenated with ELMo's mix gamma * sum_j s_j h_j -> linear."""
    shapes, notes = [], []
    # TagLM: tagger column x 0..3.2, LM column x 3.6..6.4
    _stack(
        0,
        3.2,
        [
            (0, labels["words"], GREY),
            (1, labels["char_emb"], TASK_C),
            (2, labels["rnn1"], TASK_C),
            (3, labels["concat"], HEAD_C),
            (4, labels["rnn2"], TASK_C),
            (5, labels["crf"], TASK_C),
        ],
        shapes,
        notes,
    )
    s, t = _box(3.6, 0.68, 6.4, 1.32, labels["lm"], LM_C, dash="dot")
    shapes.append(s), notes.append(t)
    s, t = _box(3.6, 1.68, 6.4, 2.32, labels["lm_states"], LM_C)
    shapes.append(s), notes.append(t)
    notes.append(_arrow((3.2, 0.2), (4.2, 0.66), GREY))
    notes.append(_arrow((5.0, 1.33), (5.0, 1.66), LM_C))
    notes.append(_arrow((5.0, 2.33), (3.22, 2.95), LM_C, 2.2))
    notes.append(
        {"x": 3.2, "y": 6.0, "text": f"<b>{labels['taglm']}</b>", "showarrow": False, "xref": "x", "yref": "y"}
    )
    # the app's head: x 7.6..10.8 and 11.2..14
    _stack(
        7.6,
        10.8,
        [
            (0, labels["words"], GREY),
            (1, labels["own_emb"], TASK_C),
            (2, labels["bilstm"], TASK_C),
            (3, labels["concat_app"], HEAD_C),
            (4, labels["linear"], TASK_C),
        ],
        shapes,
        notes,
    )
    s, t = _box(11.2, 1.68, 14.0, 2.32, labels["elmo_mix"], LM_C)
    shapes.append(s), notes.append(t)
    notes.append(_arrow((10.8, 0.2), (12.6, 1.66), GREY))
    notes.append(_arrow((12.6, 2.33), (10.82, 2.95), LM_C, 2.2))
    notes.append({"x": 10.8, "y": 6.0, "text": f"<b>{labels['app']}</b>", "showarrow": False, "xref": "x", "yref": "y"})
    shapes.append(
        {"type": "line", "x0": 7.0, "x1": 7.0, "y0": -0.4, "y1": 6.2, "line": {"color": "#ccc", "dash": "dot"}}
    )
    return _canvas(shapes, notes, (-0.2, 14.2), (-0.5, 6.4), 470)


def cove_figure(labels: dict[str, str]) -> go.Figure:
    """Left: a translation model (source words -> GloVe -> 2-layer biLSTM encoder -> attentional decoder -> target
    words), trained on sentence pairs. Right: its encoder copied, frozen, into a task model whose input is
    [GloVe(w); CoVe(w)]. A dashed frame says that this app has no such model (no parallel corpus offline)."""
    shapes, notes = [], []
    _stack(
        0,
        3.4,
        [
            (0, labels["src"], GREY),
            (1, labels["glove"], TASK_C),
            (2, labels["encoder"], LM_C),
            (3, labels["decoder"], GREY),
            (4, labels["tgt"], GREY),
        ],
        shapes,
        notes,
    )
    notes.append({"x": 1.7, "y": 5.0, "text": f"<b>{labels['mt']}</b>", "showarrow": False, "xref": "x", "yref": "y"})
    _stack(
        6.0,
        9.4,
        [
            (0, labels["task_words"], GREY),
            (1, labels["task_in"], HEAD_C),
            (2, labels["task_model"], TASK_C),
            (3, labels["label"], TASK_C),
        ],
        shapes,
        notes,
    )
    notes.append({"x": 7.7, "y": 5.0, "text": f"<b>{labels['task']}</b>", "showarrow": False, "xref": "x", "yref": "y"})
    notes.append(_arrow((3.42, 2.0), (5.98, 1.0), LM_C, 2.4, ""))
    notes.append(
        {
            "x": 4.7,
            "y": 2.0,
            "text": labels["copy"],
            "showarrow": False,
            "xref": "x",
            "yref": "y",
            "yanchor": "bottom",
            "font": {"size": 11, "color": LM_C},
        }
    )
    shapes.append(
        {"type": "rect", "x0": -0.3, "x1": 9.7, "y0": -0.5, "y1": 5.4, "line": {"color": "#bbb", "dash": "dash"}}
    )
    notes.append(
        {
            "x": 4.7,
            "y": -0.8,
            "text": labels["not_here"],
            "showarrow": False,
            "xref": "x",
            "yref": "y",
            "font": {"size": 11, "color": GREY},
        }
    )
    return _canvas(shapes, notes, (-0.5, 9.9), (-1.1, 5.6), 420)

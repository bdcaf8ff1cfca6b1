"""Pure plot builders for the training page's timeline replay (arrays in, Plotly figure out; no Streamlit).

The recorded steps are log-spaced and start at 0 (the untrained model), so every chart over steps uses a log x axis
on which step 0 sits at `STEP0_X` with the tick text "0"; a red dotted line marks the replay's current step.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from .common import PALETTE, base_layout, escape

STEP0_X = 0.5  # where step 0 sits on the log step axes
CURRENT = "#d62728"


def step_x(steps) -> list[float]:
    """x positions of steps on a log axis (step 0 at STEP0_X)."""
    return [float(s) if s > 0 else STEP0_X for s in steps]


def _step_axis(steps, title: str) -> dict:
    top = max(max(steps), 1)
    ticks = [STEP0_X] + [10**e for e in range(0, int(np.floor(np.log10(top))) + 1)]
    return dict(
        type="log",
        tickvals=ticks,
        ticktext=["0"] + [f"{int(t):,}" for t in ticks[1:]],
        title=dict(text=escape(title)),
        range=[np.log10(STEP0_X) - 0.1, np.log10(top) + 0.1],
        showgrid=True,
        gridcolor="#eee",
    )


def _mark(step: int, text: str) -> tuple[list[dict], list[dict]]:
    """(shapes, annotations): a red dotted vertical line at the current step, labelled `text` at the top."""
    x = step_x([step])[0]
    shapes = [
        dict(type="line", xref="x", yref="paper", x0=x, x1=x, y0=0, y1=1, line=dict(color=CURRENT, width=2, dash="dot"))
    ]
    notes = (
        [
            dict(
                x=float(np.log10(x)),
                xref="x",
                y=1.0,
                yref="paper",
                text=escape(text),
                showarrow=False,
                yanchor="bottom",
                font=dict(color=CURRENT, size=11),
            )
        ]
        if text
        else []
    )
    return shapes, notes


def _figure(
    data: list[dict], title: str, height: int, xaxis: dict, yaxis: dict, shapes=(), annotations=()
) -> go.Figure:
    """One go.Figure from plain dicts (validated once: update_* calls would re-validate the figure each time)."""
    return go.Figure(
        dict(
            data=data,
            layout=base_layout(
                (10, 10, 60, 30),
                hover=True,
                title=dict(text=escape(title), y=0.98, yanchor="top"),
                height=height,
                plot_bgcolor="white",
                legend=dict(orientation="h", y=-0.4, yanchor="top"),
                xaxis=xaxis,
                yaxis=dict(showgrid=True, gridcolor="#eee", **yaxis),
                shapes=list(shapes),
                annotations=list(annotations),
            ),
        )
    )


def _over_steps(
    data: list[dict],
    steps,
    step: int,
    labels: dict[str, str],
    y_title: str,
    yrange=None,
    height: int = 330,
    shapes=(),
    annotations=(),
) -> go.Figure:
    mark_shapes, notes = _mark(step, labels.get("now", ""))
    yaxis = dict(title=dict(text=escape(y_title)), **({"range": list(yrange)} if yrange is not None else {}))
    return _figure(
        data,
        labels["title"],
        height,
        _step_axis(steps, labels["step"]),
        yaxis,
        [*shapes, *mark_shapes],
        [*annotations, *notes],
    )


def loss_figure(
    series: dict, history: list[tuple[int, float]], step: int, labels: dict[str, str], height: int = 330
) -> go.Figure:
    """Training and held-out loss at the recorded steps (`series` = replay.losses), the run's denser training-loss
    log (`history`, faint) and the current step. labels: title, train, valid, history, step, loss, now."""
    data = []
    if history:
        hs, hv = zip(*history)
        data.append(
            dict(
                type="scatter",
                x=step_x(hs),
                y=list(hv),
                mode="lines",
                name=escape(labels["history"]),
                line=dict(color="rgba(31,119,180,0.35)", width=1),
                hoverinfo="skip",
            )
        )
    xs = step_x(series["step"])
    for key, colour in (("train", PALETTE[0]), ("valid", PALETTE[3])):
        pts = [(x, v) for x, v in zip(xs, series[key]) if v is not None]
        if pts:
            data.append(
                dict(
                    type="scatter",
                    x=[a for a, _ in pts],
                    y=[b for _, b in pts],
                    mode="lines+markers",
                    name=escape(labels[key]),
                    line=dict(color=colour, width=2),
                )
            )
    return _over_steps(data, series["step"], step, labels, labels["loss"], height=height)


def accuracy_figure(
    steps,
    acc: np.ndarray,
    layer_labels: list[str],
    step: int,
    labels: dict[str, str],
    chance: float | None = None,
    word_acc: np.ndarray | None = None,
    height: int = 380,
) -> go.Figure:
    """Sense accuracy per layer over steps (`acc` (S, L), one line per layer, darker = deeper), the majority-sense
    baseline and, dashed, one set's accuracy at the chosen layer (`word_acc` (S,)). labels: title, step, accuracy,
    chance, word, now."""
    acc = np.asarray(acc, dtype=float)
    xs = step_x(steps)
    L = acc.shape[1]
    data = []
    for j in range(L):
        shade = 0.3 + 0.7 * (j / max(L - 1, 1))
        data.append(
            dict(
                type="scatter",
                x=xs,
                y=acc[:, j].tolist(),
                mode="lines+markers",
                name=escape(layer_labels[j]),
                line=dict(color=f"rgba(44,160,44,{shade:.2f})", width=1.5 + j * 0.4),
                marker=dict(size=5),
                hovertemplate="%{y:.2f}<extra>" + escape(layer_labels[j]) + "</extra>",
            )
        )
    if word_acc is not None:
        data.append(
            dict(
                type="scatter",
                x=xs,
                y=np.asarray(word_acc, dtype=float).tolist(),
                mode="lines",
                name=escape(labels["word"]),
                line=dict(color="#333", width=2, dash="dash"),
            )
        )
    shapes, notes = [], []
    if chance is not None:
        shapes.append(
            dict(
                type="line",
                xref="paper",
                yref="y",
                x0=0,
                x1=1,
                y0=chance,
                y1=chance,
                line=dict(color="#999", width=1, dash="dot"),
            )
        )
        notes.append(
            dict(
                xref="paper",
                x=1,
                y=chance,
                yref="y",
                text=escape(labels["chance"]),
                showarrow=False,
                xanchor="right",
                yanchor="top",
                font=dict(size=10, color="#777"),
            )
        )
    return _over_steps(data, steps, step, labels, labels["accuracy"], (0, 1.05), height, shapes, notes)


def map_figure(
    coords: np.ndarray,
    previous: np.ndarray | None,
    senses: list[str],
    hover: list[str],
    bounds: tuple[float, float, float, float],
    title: str,
    axis_titles: tuple[str, str] = ("PC1", "PC2"),
    height: int = 420,
) -> go.Figure:
    """One step of the example set's map: points (n, 2) coloured by sense (colours fixed by the sorted sense names,
    so they stay the same at every step), a thin grey line from each point's place at the previous recorded step
    (`previous`, or None), and axis ranges fixed to `bounds` (all steps), so the points move and the axes do not.
    `hover[i]` is already escaped."""
    P = np.asarray(coords, dtype=float)
    data = []
    if previous is not None:
        Q = np.asarray(previous, dtype=float)
        lx, ly = [], []
        for (x0, y0), (x1, y1) in zip(Q.tolist(), P.tolist()):
            lx += [x0, x1, None]
            ly += [y0, y1, None]
        data.append(
            dict(
                type="scatter",
                x=lx,
                y=ly,
                mode="lines",
                line=dict(color="rgba(120,120,120,0.45)", width=1),
                hoverinfo="skip",
                showlegend=False,
            )
        )
    for c, sense in enumerate(sorted(set(senses))):
        idx = [i for i, s in enumerate(senses) if s == sense]
        data.append(
            dict(
                type="scatter",
                x=P[idx, 0].tolist(),
                y=P[idx, 1].tolist(),
                mode="markers",
                name=escape(sense),
                marker=dict(size=12, color=PALETTE[c % len(PALETTE)], line=dict(width=1, color="white")),
                text=[hover[i] for i in idx],
                hovertemplate="%{text}<extra>" + escape(sense) + "</extra>",
            )
        )
    x0, x1, y0, y1 = bounds
    axis = dict(zeroline=False, showticklabels=False, showgrid=True, gridcolor="#eee")
    return _figure(
        data,
        title,
        height,
        dict(range=[x0, x1], title=dict(text=escape(axis_titles[0])), **axis),
        dict(range=[y0, y1], title=dict(text=escape(axis_titles[1])), zeroline=False, showticklabels=False),
    )


def hits_figure(
    steps,
    hits: dict[str, list[int]],
    total: int,
    step: int,
    names: dict[str, str],
    labels: dict[str, str],
    height: int = 260,
) -> go.Figure:
    """How many of the `total` fixed sentences get the written-for answer as the top answer, per recorded step;
    one line per kind of answer (`names[key]`). labels: title, step, count, now."""
    xs = step_x(steps)
    data = [
        dict(
            type="scatter",
            x=xs,
            y=list(ys),
            mode="lines+markers",
            name=escape(names.get(key, key)),
            line=dict(color=PALETTE[c % len(PALETTE)], width=2),
        )
        for c, (key, ys) in enumerate(hits.items())
    ]
    return _over_steps(data, steps, step, labels, labels["count"], (-0.5, total + 0.5), height)


def shares_figure(
    steps, shares: dict[str, np.ndarray], step: int, names: dict[str, str], labels: dict[str, str], height: int = 300
) -> go.Figure:
    """One attention head's shares over steps: {share name: (S,)} (previous/next/self/[SEP]/[CLS] token),
    `names[share]` their legend names. labels: title, step, share, now."""
    xs = step_x(steps)
    data = [
        dict(
            type="scatter",
            x=xs,
            y=np.asarray(ys, dtype=float).tolist(),
            mode="lines+markers",
            name=escape(names.get(key, key)),
            line=dict(color=PALETTE[c % len(PALETTE)], width=2),
            hovertemplate="%{y:.2f}<extra>" + escape(names.get(key, key)) + "</extra>",
        )
        for c, (key, ys) in enumerate(shares.items())
    ]
    return _over_steps(data, steps, step, labels, labels["share"], (0, 1.02), height)


UNKNOWN = ("<unk>", "[UNK]")  # the token every out-of-vocabulary word shares: not a guess a table should show


def pct(p: float) -> str:
    """A probability as a short percentage: 41%, 0.4%, <0.1%."""
    return f"{p:.0%}" if p >= 0.01 else (f"{p:.1%}" if p >= 0.001 else "<0.1%")


def answer_text(top: list[tuple[str, float]], k: int = 5, hide=()) -> str:
    """'奶 41% · 水 9% · 茶 0.4% · ...' (plain text for a table cell): the first k guesses not in `hide`."""
    return " · ".join(f"{w} {pct(p)}" for w, p in [(w, p) for w, p in top if w not in hide][:k])


def hidden_share(top: list[tuple[str, float]], hide=UNKNOWN) -> float:
    """The probability the recorded guesses in `hide` (<unk>) took."""
    return float(sum(p for w, p in top if w in hide))

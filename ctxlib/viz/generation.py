"""The GPT writing page's views (no Streamlit): checking a prompt, the text as HTML, one character at a time as an
animated figure, and every step's top-5 candidates as a grid.

`steps` are GptEncoder.generate's: [{"char", "prob" (the model's probability of it), "sample_prob" (after temperature
and top-k), "candidates": [(char, prob) x 5] (the model's top 5)}]. User text is escaped everywhere.
"""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

from ..tokens import char_tokens
from .common import CJK_FONT, base_layout, escape

CHOSEN, OTHER, PROMPT_GREY = "#d62728", "#2ca02c", "#666666"
WRAP = 36  # characters per line of the growing text in the animated figure
# beginnings offered on the page (written for ctxlab): everyday and review text, which the model continues without
# reaching for 1998 news and the politicians in it
EXAMPLE_PROMPTS = ("今天天气", "这家酒店的服务", "我买了一台笔记本电脑", "周末我们去")


def prompt_problem(enc, prompt: str) -> tuple[str, int] | None:
    """Why `enc` (a GPT) cannot continue `prompt`, as (problem, its length in tokens), or None when it can.

    Problems, in GptEncoder.prompt_ids' order: "empty" (nothing but spaces), "unknown" (no character the model
    knows), "too_long" (more tokens than the model reads: max_len - 1 with [CLS]). The page shows its own text for each."""
    toks = char_tokens(prompt or "")
    if not toks:
        return "empty", 0
    if getattr(enc, "kind", "") == "hf":  # a Transformers LM: its own sub-word tokens, [UNK]-free byte-level BPE
        n = len(enc.tokenize(prompt))
        return ("too_long", n) if n > enc.max_len - 1 else None
    tok = getattr(enc, "tokenizer", None)
    if tok is not None and all(tok.token_id(t) == tok.unk_id for t, _, _ in toks):
        return "unknown", len(toks)
    if len(toks) > enc.max_len - 1:
        return "too_long", len(toks)
    return None


def parse_float(raw, default: float, lo: float, hi: float) -> float:
    """A float from a query parameter, clamped to [lo, hi]; `default` when it is not a number."""
    try:
        v = float(raw)
    except (TypeError, ValueError):
        return default
    return default if v != v else min(hi, max(lo, v))  # NaN -> default


def _wrap(text: str, n: int = WRAP) -> list[str]:
    return [text[i : i + n] for i in range(0, len(text), n)] or [""]


def text_so_far(prompt: str, steps: list[dict], i: int, n: int = WRAP) -> str:
    """Plotly title text after step `i` (0-based): the prompt in grey, the characters written so far, the newest
    one bold red; wrapped every `n` characters, each run of text escaped."""
    kinds = ["p"] * len(prompt) + ["g"] * sum(len(s["char"]) for s in steps[:i]) + ["new"] * len(steps[i]["char"])
    text = prompt + "".join(s["char"] for s in steps[:i]) + steps[i]["char"]
    style = {
        "p": f'<span style="color:{PROMPT_GREY}">{{}}</span>',
        "g": "{}",
        "new": f'<b><span style="color:{CHOSEN}">{{}}</span></b>',
    }
    lines = []
    for a in range(0, len(text), n):
        runs, b = [], a
        while b < min(a + n, len(text)):
            e = b
            while e < min(a + n, len(text)) and kinds[e] == kinds[b]:
                e += 1
            runs.append(style[kinds[b]].format(escape(text[b:e])))
            b = e
        lines.append("".join(runs))
    return "<br>".join(lines)


def _bars(step: dict, outside: str) -> dict:
    """One step's bar trace: the model's top 5 at y = 0..4 (the chosen one red), plus the chosen character at y = 5
    when sampling picked one outside the top 5 (the axis names that row `outside`)."""
    items = list(step["candidates"])
    if step["char"] not in [c for c, _ in items]:
        items.append((step["char"], step["prob"]))
    return dict(
        type="bar",
        orientation="h",
        x=[float(p) for _, p in items],
        y=list(range(len(items))),
        text=[f"{escape(c)}  {float(p):.1%}" for c, p in items],
        textposition="outside",
        marker=dict(color=[CHOSEN if c == step["char"] else OTHER for c, _ in items]),
        hovertemplate="%{text}<extra></extra>",
        cliponaxis=False,
    )


def writing_figure(prompt: str, steps: list[dict], labels: dict[str, str]) -> go.Figure:
    """GPT writing one character at a time: a Plotly animation (play / pause buttons and a step slider) whose
    frame i shows step i's top-5 candidates (the chosen one red) and, as its title, the text grown so far.

    labels: "play", "pause", "step" (the slider's prefix), "outside" (the rank of a chosen character outside the
    top 5), "probability" (the x axis)."""
    if not steps:
        return go.Figure()
    frames = [
        dict(
            name=str(i + 1),
            data=[_bars(s, labels["outside"])],
            layout=dict(title=dict(text=text_so_far(prompt, steps, i))),
        )
        for i, s in enumerate(steps)
    ]
    lines = len(_wrap(prompt + "".join(s["char"] for s in steps)))
    top = max(float(p) for s in steps for _, p in s["candidates"] + [(s["char"], s["prob"])])
    now = dict(frame=dict(duration=0, redraw=True), mode="immediate", transition=dict(duration=0))
    slider = dict(
        active=0,
        currentvalue=dict(prefix=labels["step"] + " "),
        x=0.2,
        len=0.8,
        y=0,
        yanchor="top",
        pad=dict(t=60),
        steps=[dict(method="animate", label=f["name"], args=[[f["name"]], now]) for f in frames],
    )
    play = dict(
        type="buttons",
        direction="left",
        x=0,
        y=0,
        xanchor="left",
        yanchor="top",
        pad=dict(t=95),
        showactive=False,
        buttons=[
            dict(
                label=labels["play"],
                method="animate",
                args=[None, dict(frame=dict(duration=400, redraw=True), fromcurrent=True, transition=dict(duration=0))],
            ),
            dict(label=labels["pause"], method="animate", args=[[None], now]),
        ],
    )
    return go.Figure(
        dict(
            data=frames[0]["data"],
            frames=frames,
            layout=base_layout(
                (60, 20, 50 + 28 * lines, 130),
                title=dict(
                    text=frames[0]["layout"]["title"]["text"],
                    x=0.01,
                    xanchor="left",
                    y=0.98,
                    yanchor="top",
                    font=dict(size=20),
                ),
                xaxis=dict(
                    range=[0, min(1.2, 0.05 + 1.35 * top)],
                    tickformat=".0%",
                    tickvals=[0, 0.2, 0.4, 0.6, 0.8, 1],
                    title=dict(text=labels["probability"]),
                ),
                yaxis=dict(
                    range=[5.5, -0.5],
                    tickmode="array",
                    tickvals=list(range(6)),
                    ticktext=[f"#{r}" for r in range(1, 6)] + [labels["outside"]],
                ),
                updatemenus=[play],
                sliders=[slider],
                height=420 + 28 * lines,
                showlegend=False,
            ),
        )
    )


def steps_figure(steps: list[dict], title: str = "") -> go.Figure:
    """Every step at a glance: one row per written character, its top-5 candidates left to right (colour =
    probability, text = the character), the chosen one boxed in red; a row whose chosen character was outside the
    top 5 is marked "*" in its label."""
    n = len(steps)
    z = np.array(
        [[float(p) for _, p in s["candidates"]] + [np.nan] * (5 - len(s["candidates"])) for s in steps]
    ).reshape(n, 5)
    text = [[escape(c) for c, _ in s["candidates"]] + [""] * (5 - len(s["candidates"])) for s in steps]
    rows = [
        f"{i + 1} {escape(s['char'])}{'' if s['char'] in [c for c, _ in s['candidates']] else ' *'}"
        for i, s in enumerate(steps)
    ]
    shapes = []
    for i, s in enumerate(steps):
        j = next((j for j, (c, _) in enumerate(s["candidates"]) if c == s["char"]), None)
        if j is not None:
            shapes.append(
                dict(type="rect", x0=j - 0.5, x1=j + 0.5, y0=i - 0.5, y1=i + 0.5, line=dict(color=CHOSEN, width=3))
            )
    return go.Figure(
        dict(
            data=[
                dict(
                    type="heatmap",
                    z=z,
                    x=list(range(5)),
                    y=list(range(n)),
                    text=text,
                    texttemplate="%{text}",
                    textfont=dict(size=15),
                    colorscale="Greens",
                    zmin=0,
                    zmax=1,
                    hovertemplate="%{text}: %{z:.1%}<extra></extra>",
                    colorbar=dict(thickness=10, tickformat=".0%"),
                )
            ],
            layout=base_layout(
                (70, 10, 70, 10),
                title=dict(text=escape(title)),
                shapes=shapes,
                height=90 + 26 * n,
                xaxis=dict(
                    side="top", tickmode="array", tickvals=list(range(5)), ticktext=[f"#{r}" for r in range(1, 6)]
                ),
                yaxis=dict(autorange="reversed", tickmode="array", tickvals=list(range(n)), ticktext=rows),
            ),
        )
    )


def text_html(result: dict) -> str:
    """The whole text as escaped HTML: the prompt grey, each written character underlined in a green as strong as
    the model's probability of it, with its top-5 candidates as a tooltip."""
    out = [f'<span style="color:{PROMPT_GREY}">{html.escape(result["prompt"])}</span>']
    for s in result["steps"]:
        tip = html.escape(" ".join(f"{c} {float(p):.0%}" for c, p in s["candidates"]), quote=True)
        alpha = 0.15 + 0.85 * min(1.0, float(s["prob"]))
        out.append(
            f'<span title="{tip}" style="border-bottom:3px solid rgba(44,160,44,{alpha:.2f});">'
            f"{html.escape(s['char'])}</span>"
        )
    return (
        f'<div style="font-family:{CJK_FONT};font-size:22px;line-height:1.8;white-space:pre-wrap;'
        f'word-break:break-all;">{"".join(out)}</div>'
    )

"""Pure plot builders for the ELMo page (arrays in, Plotly figure out; no streamlit).

Follows Peters et al. (2018), "Deep contextualized word representations": a
char-CNN + highway token layer x_k, then L=2 biLSTM layers whose forward and
backward states are concatenated, so a token has 2L+1 vectors; a task mixes
them as ELMo_k = gamma * sum_j softmax(s)_j * h_{k,j}.

The architecture drawing (and `split_states`, the 2L+1 vectors of every token) is in viz/elmo_flow.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..analysis import expected_layer
from ..vecmath import cosine_matrix
from .common import base_layout, escape, hbar_panels, with_true_bar
from .elmo_flow import BWD, FWD, TOK, split_states

if TYPE_CHECKING:
    from ..records import EvalResult

TASK_COLORS = {"pos": "#1f77b4", "ner": "#2ca02c", "sentiment": "#d62728"}


def word_vectors(layers: np.ndarray, index: int) -> np.ndarray:
    """The 2L+1 vectors (2L+1, d) of the token at `index`, in split_states' order."""
    return np.stack([v[index] for v in split_states(layers).values()])


def vector_names(n_lstm: int, labels: dict[str, str]) -> list[str]:
    """Names of the 2L+1 vectors: x, then h_j forward and backward per biLSTM layer (labels: see ARCH_LABELS)."""
    names = [labels["token_vector"]]
    for j in range(1, n_lstm + 1):
        names += [f"h{j}→ ({labels['forward']})", f"h{j}← ({labels['backward']})"]
    return names


# -- the 2L+1 vectors of one word --------------------------------------------------------------
def layer_vectors_figure(
    vecs: np.ndarray,
    names: list[str],
    word: str,
    max_dims: int = 128,
    titles: tuple[str, str] = ("{word}: 2L+1 = {n} vectors (dims 1–{dims})", "cosine between them"),
    dim_label: str = "dim",
) -> go.Figure:
    """Left: the 2L+1 vectors as heatmap rows (first `max_dims` dimensions); right: their cosines. `titles`: the
    panels' titles, the first a template with {word}, {n} (vectors) and {dims} (dimensions shown); `dim_label`: the
    hover's word for a dimension."""
    vecs = np.asarray(vecs, dtype=np.float32)
    shown = vecs[:, :max_dims]
    cos = cosine_matrix(vecs).astype(np.float32)
    names_s = [escape(n) for n in names]
    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.62, 0.38],
        horizontal_spacing=0.16,
        subplot_titles=[
            escape(titles[0]).format(word=escape(word), n=len(names), dims=shown.shape[1]),
            escape(titles[1]),
        ],
    )
    lim = float(np.abs(shown).max()) or 1.0
    fig.add_trace(
        go.Heatmap(
            z=shown,
            y=names_s,
            colorscale="RdBu",
            zmid=0,
            zmin=-lim,
            zmax=lim,
            showscale=False,
            hovertemplate=f"%{{y}}<br>{escape(dim_label)} %{{x}}: %{{z:.3f}}<extra></extra>",
        ),
        1,
        1,
    )
    fig.add_trace(
        go.Heatmap(
            z=cos,
            x=names_s,
            y=names_s,
            colorscale="Viridis",
            zmin=-1,
            zmax=1,
            texttemplate="%{z:.2f}",
            hovertemplate="%{y} · %{x}: %{z:.3f}<extra></extra>",
            colorbar=dict(thickness=10),
        ),
        1,
        2,
    )
    fig.update_yaxes(autorange="reversed")
    fig.update_yaxes(showticklabels=False, row=1, col=2)  # same names as the left panel
    fig.update_layout(**base_layout(height=360))
    return fig


# -- the two language models -------------------------------------------------------------------
LM_SPECIALS = ("<unk>", "<S>", "</S>", "<pad>", "<bos>", "<eos>")


def context_label(words: list[str], side: str, n: int = 12) -> str:
    """What one LM has read, shortened next to the predicted word: the end of the left context ("left"),
    the start of the right context ("right"); "∅" when there is none."""
    text = "".join(words)
    if not text:
        return "∅"
    if len(text) <= n:
        return text
    return "…" + text[-n:] if side == "left" else text[:n] + "…"


def drop_specials(items: list[tuple[str, float]], k: int) -> list[tuple[str, float]]:
    """The top `k` real words of an LM's candidate list (boundary and unknown-word symbols left out)."""
    return [(w, p) for w, p in items if w not in LM_SPECIALS][:k]


def lm_panels(lm: dict, tokens: list[str], index: int, k: int = 10, n: int = 20, words_only: bool = False):
    """From lm_topk's {"forward": [(word, p)], "backward": ...} at `index`: each LM's top `k` real words (with
    `words_only`, punctuation left out too: tokens.is_punct; the probabilities are the model's, not renormalised), and
    what each has read (context_label of the words left and right of the position, `n` characters)."""
    from ..tokens import is_punct

    keep = (lambda items: [(w, p) for w, p in items if not is_punct(w)]) if words_only else list
    return (
        drop_specials(keep(lm["forward"]), k),
        drop_specials(keep(lm["backward"]), k),
        context_label(tokens[:index], "left", n),
        context_label(tokens[index + 1 :], "right", n),
    )


def lm_bars_figure(
    forward: list[tuple[str, float]],
    backward: list[tuple[str, float]],
    actual: str,
    titles: tuple[str, str],
    truth: dict | None = None,
    fmt: tuple[str, str] = ("{token} #{rank}", "{token} ?"),
) -> go.Figure:
    """Side by side: the forward LM's top words for the position (from the left context only) and the
    backward LM's (from the right context only); the real word is highlighted. With `truth` (lm_topk's "actual":
    {"word", "forward", "backward", "rank": {...}}), a real word outside a panel's list gets its own bar with its rank
    (`fmt`: common.with_true_bar's rank and unknown labels).

    Built as one dict (one validation pass): make_subplots + update calls cost ~50 ms per figure."""
    panels, reds = [], []
    for name, items, colour, title in (("forward", forward, FWD, titles[0]), ("backward", backward, BWD, titles[1])):
        if truth:
            known = truth.get("word") not in (None, "<unk>")
            true = {
                "token": truth["word"] if known else actual,
                "prob": truth.get(name),
                "rank": (truth.get("rank") or {}).get(name) if known else None,
            }
        else:
            true = {"token": actual, "rank": 1}  # rank not known: marked only among the candidates
        items, red = with_true_bar(items, true, *fmt)
        panels.append((title, items, colour))
        reds.append(red)
    return hbar_panels(panels, actual=reds)


# -- mixing weights from the eval files --------------------------------------------------------
def mix_weights_figure(
    evals: dict[str, EvalResult], layer_labels: list[str], task_names: dict[str, str], uniform: str = "uniform"
) -> go.Figure:
    """Grouped bars of softmax(s_j) per task, with gamma and the expected layer in the legend; the 1/n line: `uniform`."""
    fig = go.Figure()
    for task, ev in evals.items():
        wts = [float(x) for x in ev.mix_weights or []]
        if not wts:
            continue
        g = ev.gamma
        e = ev.expected_layer if ev.expected_layer is not None else expected_layer(wts)
        name = (
            f"{task_names.get(task, task)} (γ={float(g):.2f}, E[j]={float(e):.2f})"
            if g is not None
            else task_names.get(task, task)
        )
        fig.add_trace(
            go.Bar(
                x=[escape(s) for s in layer_labels[: len(wts)]],
                y=wts,
                name=escape(name),
                marker_color=TASK_COLORS.get(task),
                text=[f"{x:.2f}" for x in wts],
                textposition="outside",
            )
        )
    fig.add_hline(
        y=1 / max(len(layer_labels), 1),
        line_dash="dot",
        line_color="#888",
        annotation_text=escape(uniform),
        annotation_position="top left",
    )
    fig.update_layout(
        **base_layout(
            (10, 10, 30, 10),
            barmode="group",
            height=360,
            yaxis_title="softmax(s)_j",
            yaxis_range=[0, 1.05],
            legend=dict(orientation="h", y=-0.15),
        )
    )
    return fig


def probe_scores_figure(ev: EvalResult, layer_labels: list[str], labels: dict[str, str]) -> go.Figure:
    """Linear-probe scores for one task: the same probe on word2vec vectors (grey), on each single ELMo layer,
    and on the ScalarMix of all layers. `labels`: "mix", "title", and the y axis's title under the metric's name."""
    per = [float(x) for x in ev.per_layer_score or []]
    xs, ys, colors = [], [], []
    w2v = ev.word2vec_probe_score
    if w2v is not None:
        xs.append("word2vec")
        ys.append(float(w2v))
        colors.append("#bbbbbb")
    xs += [escape(s) for s in layer_labels[: len(per)]]
    ys += per
    colors += ["#9ecae1"] * len(per)
    mix = ev.mix_probe_score
    if mix is not None:
        xs.append(escape(labels.get("mix", "mix")))
        ys.append(float(mix))
        colors.append("#9467bd")
    fig = go.Figure(go.Bar(x=xs, y=ys, marker_color=colors, text=[f"{y:.3f}" for y in ys], textposition="outside"))
    vals = ys
    lo = max(0.0, min(vals) - 0.1) if vals else 0.0
    hi = min(1.05, max(vals) + 0.08) if vals else 1.0
    fig.update_layout(
        **base_layout(
            height=300,
            yaxis_title=escape(labels.get(ev.metric, ev.metric)),
            yaxis_range=[lo, hi],
            title=escape(labels.get("title", "")),
        )
    )
    return fig


USAGE_KEYS = ("baseline_score", "word2vec_score", "input_score", "concat_score")


def usage_tasks(evals: dict[str, EvalResult]) -> list[str]:
    """The tasks whose eval has a score for ELMo as the task model's input or concatenated to its hidden layer."""
    return [t for t, ev in evals.items() if ev.input_score is not None or ev.concat_score is not None]


def usage_figure(evals: dict[str, EvalResult], task_names: dict[str, str], labels: dict[str, str]) -> go.Figure:
    """The task model without pretrained vectors, with word2vec as input, with ELMo as its input and with ELMo
    concatenated to its hidden layer, per task (the tasks of usage_tasks)."""
    tasks = usage_tasks(evals)
    fig = go.Figure()
    for key, color in zip(USAGE_KEYS, ("#dddddd", "#999999", "#1f77b4", "#9467bd")):
        ys = [getattr(evals[t], key) for t in tasks]
        if all(y is None for y in ys):
            continue
        fig.add_trace(
            go.Bar(
                x=[escape(task_names.get(t, t)) for t in tasks],
                y=[float(y) if y is not None else None for y in ys],
                name=escape(labels.get(key, key)),
                marker_color=color,
                text=[f"{float(y):.3f}" if y is not None else "" for y in ys],
                textposition="outside",
            )
        )
    fig.update_layout(
        **base_layout(
            (10, 10, 30, 10), barmode="group", height=340, yaxis_range=[0, 1.1], legend=dict(orientation="h", y=-0.15)
        )
    )
    return fig


def history_weights(history) -> tuple[list[int], np.ndarray, list[float]]:
    """Normalise a train_mix_live history to (steps, (n, n_layers) weights, gammas).

    Accepts a list of dicts with "weights"/"mix_weights" (and optional "step", "gamma"), or a list of weight lists.
    """
    steps, ws, gs = [], [], []
    for k, h in enumerate(history or []):
        if isinstance(h, dict):
            w = h.get("weights", h.get("mix_weights"))
            steps.append(int(h.get("step", k)))
            gs.append(float(h["gamma"]) if h.get("gamma") is not None else float("nan"))
        else:
            w = h
            steps.append(k)
            gs.append(float("nan"))
        ws.append([float(x) for x in w])
    return steps, np.asarray(ws, dtype=np.float32).reshape(len(ws), -1), gs


def mix_history_figure(history, layer_labels: list[str], title: str = "", x_title: str = "step") -> go.Figure:
    """softmax(s_j) over the live training steps, one line per layer."""
    steps, ws, _ = history_weights(history)
    fig = go.Figure()
    colors = [TOK, "#17becf", "#9467bd", "#8c564b", "#e377c2"]
    for j in range(ws.shape[1] if ws.size else 0):
        lab = layer_labels[j] if j < len(layer_labels) else f"layer {j}"
        fig.add_trace(
            go.Scatter(x=steps, y=ws[:, j], mode="lines", name=escape(lab), line=dict(color=colors[j % 5], width=3))
        )
    if ws.size:
        fig.add_hline(y=1 / ws.shape[1], line_dash="dot", line_color="#888")
    fig.update_layout(
        **base_layout(
            (10, 10, 30, 10),
            height=300,
            xaxis_title=escape(x_title),
            yaxis_title="softmax(s)_j",
            yaxis_range=[0, 1],
            title=escape(title),
            legend=dict(orientation="h", y=-0.25),
        )
    )
    return fig


# -- data helpers the page uses (no streamlit) --------------------------------------------------
def nearest_rows(
    encoder,
    layers: np.ndarray,
    layer_names: list[str],
    index: int,
    exclude=(),
    topn: int = 6,
    counts=None,
    min_count: int = 0,
) -> dict[str, str]:
    """{layer name: "word cos  word cos ..."}: the vocabulary words nearest to the token's vector in each layer; with
    `counts` (word -> training-text count) only words seen at least `min_count` times, each with its count."""

    def fmt(w: str, s: float) -> str:
        return f"{w} {s:.2f}" + ("" if counts is None else f" ({counts.get(w, 0):,})")

    return {
        layer_names[j]: "  ".join(
            fmt(w, s)
            for w, s in encoder.nearest_words(
                layers[j, index], j, topn=topn, exclude=tuple(exclude), counts=counts, min_count=min_count
            )
        )
        for j in range(np.asarray(layers).shape[0])
    }


def live_summary(res: dict) -> dict:
    """The values of a train_mix result's summary line: weights ("0.600, 0.300, 0.100"), gamma and score (NaN if absent)."""
    return {
        "weights": ", ".join(f"{x:.3f}" for x in res.get("mix_weights") or []),
        "gamma": float(res.get("gamma", float("nan"))),
        "score": float(res.get("score", float("nan"))),
    }

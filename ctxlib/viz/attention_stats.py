"""The numbers behind the attention views (arrays in, arrays or dicts out; no Plotly, no streamlit): which tokens
are shown and their renormalised attention, row entropy, one summary per head with a short label of what it mostly
does (after Clark et al. 2019, "What Does BERT Look At?"), where a word looks in each layer and how far its vector
drifts from layer 0. The figures are in viz/attention.py.

Shapes: `att` is (n_layers, n_heads, T, T), rows = the attending token ("from"), columns = the attended token
("to"); each row sums to 1 (post-softmax).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..vecmath import EPS, cosine

SPECIALS = ("[CLS]", "[SEP]")


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


_KIND_FIELDS = {
    "previous char": "kind_prev",
    "next char": "kind_next",
    "self": "kind_self",
    "[SEP]": "kind_sep",
    "[CLS]": "kind_cls",
    "broad": "kind_broad",
    "mixed": "kind_mixed",
}


def kind_label(kind: str, labels: AxisLabels = AxisLabels()) -> str:
    """The text of a head kind (head_kind's value) in `labels`."""
    return getattr(labels, _KIND_FIELDS[kind]) if kind in _KIND_FIELDS else kind


METRICS = ("entropy", "sep", "cls", "prev", "next", "self")  # the head-summary metrics, in the page's order


CAUSAL_METRICS = ("entropy", "cls", "prev", "self")  # a left-to-right model has no [SEP] and never looks at the next


def metrics_for(causal: bool) -> tuple[str, ...]:
    """The head-summary metrics worth showing: a causal model's "next" and "[SEP]" shares are 0 by construction."""
    return CAUSAL_METRICS if causal else METRICS


def summary_table(
    rows: list[dict], metric_names: dict[str, str], columns: tuple[str, str, str], labels: AxisLabels = AxisLabels()
) -> list[dict]:
    """Head summaries as table rows: (layer, head, kind) under the `columns` headers, then each metric of
    `metric_names` (key -> header) rounded to 3 decimals; the kinds named by `labels`."""
    return [
        {
            columns[0]: r["layer"],
            columns[1]: r["head"],
            columns[2]: kind_label(r["kind"], labels),
            **{name: round(r[k], 3) for k, name in metric_names.items()},
        }
        for r in rows
    ]


def mean_heads(att_layer: np.ndarray, heads: list[int]) -> np.ndarray:
    """(T, T): one layer's attention averaged over the 1-based `heads` (over all heads when none is chosen)."""
    a = np.asarray(att_layer)
    return a[[h - 1 for h in heads]].mean(0) if heads else a.mean(0)


def keep_columns(rows: np.ndarray, keep: list[int]) -> np.ndarray:
    """Each row restricted to the `keep` columns and renormalised to sum to 1 (an all-zero row stays 0)."""
    r = np.asarray(rows)[:, keep]
    return r / np.maximum(r.sum(1, keepdims=True), EPS)


def word_attention(att: np.ndarray, idx: list[int]) -> np.ndarray:
    """(n_layers, T): attention from the word made of tokens `idx` to every token, averaged over heads
    and over the word's tokens."""
    a = np.asarray(att, dtype=np.float64)[:, :, idx, :]  # (L, H, |idx|, T)
    return a.mean(axis=(1, 2)).astype(np.float32)


def drift_from_layer0(layers: np.ndarray, idx: list[int]) -> np.ndarray:
    """(n_layers,): cosine between the word's vector (mean over `idx`) at each layer and at layer 0."""
    v = np.asarray(layers, dtype=np.float64)[:, idx, :].mean(axis=1)  # (L+1, H)
    return np.array([cosine(x, v[0]) for x in v], dtype=np.float32)


def word_token_indices(spans: list[tuple[int, int]], tokens: list[str], text: str, word: str) -> list[int]:
    """Indices of the (non-special) tokens covering the first occurrence of `word` in `text`; [] if absent."""
    from ..tokens import find_all

    found = find_all(text, word) if word else []
    if not found:
        return []
    a, b = found[0]
    return [i for i, (s, e) in enumerate(spans) if e > s and s < b and e > a and tokens[i] not in SPECIALS]

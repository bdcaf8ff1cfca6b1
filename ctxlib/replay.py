"""Replaying a training timeline (ctxlib.training.timeline): the numbers the training page shows at each recorded step.

A timeline holds ~16 snapshots at log-spaced steps: losses, the example sets' target-word vectors (int8, see
`timeline.dequantize`), fill-mask answers (BERT), LM answers (ELMo: next and previous word; GPT: next character)
and attention of two fixed sentences (BERT; GPT runs recorded after the GPT branch of `Timeline._measure`).

- `find(names)`: which models' checkpoint folders hold a timeline.
- `load(name)`: a `Replay` (the JSON, the arrays, and the run's denser training-loss log from config.json).
- `projection(rp, word, layer)`: one 2-D PCA for all steps of one example set at one layer, so that motion between
  steps is motion of the vectors, not of the axes.
- `fill_mask_rows`, `lm_rows`, `answer_hits`: the answers at a step and how often the top answer is the one the
  sentence was written for; `head_shares`: attention head summaries (previous/next/self/[SEP]/[CLS]) over steps.

A field the timeline did not record gives None, never an error: the page says it was not recorded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import checkpoint, kinds
from .training import timeline as tl
from .vecmath import EPS, norms, unit_rows

# head summary shares shown over steps (viz.attention_stats.head_summaries)
SHARES = ("prev", "next", "self", "sep", "cls")


@dataclass
class Replay:
    """One model's timeline: `data` is timeline.json, `arrays` timeline.npz; snapshot k is row k of every array."""

    name: str
    path: Path
    data: dict
    arrays: dict[str, np.ndarray]
    loss_history: list[tuple[int, float]] = field(default_factory=list)  # config.json's training-loss log, if any

    @property
    def kind(self) -> str:
        return self.data["kind"]

    @property
    def snapshots(self) -> list[dict]:
        return self.data["snapshots"]

    @property
    def steps(self) -> list[int]:
        return [int(s["step"]) for s in self.snapshots]

    @property
    def layer_names(self) -> list[str]:
        return list(self.data["layer_names"])

    @property
    def words(self) -> list[str]:
        return list(self.data["sets"])

    def labels(self, word: str) -> list[str]:
        return list(self.data["sets"][word]["labels"])

    def sentences(self, word: str) -> list[str]:
        return list(self.data["sets"][word]["sentences"])


def has_timeline(name_or_path) -> bool:
    d = checkpoint.resolve(name_or_path)
    return (d / "timeline.json").is_file() and (d / "timeline.npz").is_file()


def find(names=None) -> dict[str, Path | None]:
    """{name: its checkpoint folder if it holds timeline.json and timeline.npz, else None}; names: the shipped kinds."""
    names = kinds.names(shipped=True) if names is None else names
    return {n: checkpoint.resolve(n) if has_timeline(n) else None for n in names}


def stamp(name_or_path) -> str:
    """Changes when the timeline files change (a cache key part)."""
    d = checkpoint.resolve(name_or_path)
    try:
        return f"{d}:{(d / 'timeline.json').stat().st_mtime_ns}:{(d / 'timeline.npz').stat().st_mtime_ns}"
    except OSError:
        return f"{d}:missing"


def load(name_or_path) -> Replay:
    """The timeline of a checkpoint folder; ValueError (naming the files) if it is missing, unreadable or inconsistent."""
    d = checkpoint.resolve(name_or_path)
    data, arrays = tl.load(d)
    n = len(data.get("snapshots") or [])
    if n == 0:
        raise ValueError(f"timeline.json in {d} holds no snapshots")
    for k, a in arrays.items():
        if len(a) != n:
            raise ValueError(f"timeline.npz in {d}: {k} has {len(a)} rows for {n} snapshots")
    history, last = [], int(data["snapshots"][-1]["step"])
    try:
        summary = json.loads((d / "config.json").read_text(encoding="utf-8")).get("summary", {})
        # the log up to the last snapshot (a run still going saves its config more often than its snapshots)
        history = [(int(s), float(v)) for s, v in summary.get("loss_history") or [] if int(s) <= last]
    except (OSError, ValueError, TypeError):
        pass  # the timeline replays without the denser log
    return Replay(d.name, d, data, arrays, history)


# -- vectors and the map --------------------------------------------------------------------------------------
def set_rows(rp: Replay, word: str) -> slice:
    """Rows of `word`'s sentences in the vectors arrays (all sets concatenated in `sets` order)."""
    start = 0
    for w, s in rp.data["sets"].items():
        n = len(s["sentences"])
        if w == word:
            return slice(start, start + n)
        start += n
    raise KeyError(f"no example set for {word!r} in this timeline")


def vectors(rp: Replay, word: str, layer: int) -> np.ndarray:
    """(S, n, D) float32: `word`'s token vectors of its set at `layer`, at every snapshot (dequantised)."""
    if "vectors_q" not in rp.arrays:
        raise ValueError("this timeline holds no vectors")
    rows = set_rows(rp, word)
    return tl.dequantize(rp.arrays["vectors_q"][:, rows, layer], rp.arrays["vectors_scale"][:, rows, layer])


@dataclass
class Projection:
    coords: np.ndarray  # (S, n, 2): each snapshot's points on the same two axes
    explained: tuple[float, float]  # share of the variance (all steps together) on each axis
    bounds: tuple[float, float, float, float]  # x0, x1, y0, y1 over all steps (fixed axis ranges)
    spread: np.ndarray  # (S,) root-mean-square distance of a step's unit vectors from their mean (0: all the same)
    noise: np.ndarray  # (S,) the same for the int8 rounding of the stored vectors: a spread near it is mostly rounding


def projection(rp: Replay, word: str, layer: int, same_size: bool = True) -> Projection:
    """One PCA fitted on the vectors of ALL snapshots of `word`'s set at `layer`, then each snapshot projected with it.

    Each vector is first scaled to unit length (the map shows directions, what cosine and the sense accuracy measure),
    and each snapshot's points are centred on their own mean: the vectors of all tokens drift together during
    training (the common direction of anisotropic spaces), and without centring that drift would take the first
    axis. With `same_size`, each snapshot's centred points are also scaled to spread 1 before the fit, and its points
    on the map to the same size after it: how far apart a word's tokens are changes a hundredfold during training
    (`spread`), and on one scale most steps would be a dot. The axes stay the same for all steps either way."""
    rows = set_rows(rp, word)
    V = vectors(rp, word, layer)
    scale = rp.arrays["vectors_scale"][:, rows, layer].astype(np.float64)  # (S, n)
    # rounding to int8 moves each component by at most scale/2, uniformly: sqrt(D/12) * scale in norm
    noise = (scale * np.sqrt(V.shape[-1] / 12.0) / np.maximum(norms(V), EPS)).mean(axis=1)
    return project_steps(V, same_size, noise)


def project_steps(V: np.ndarray, same_size: bool = True, noise: np.ndarray | None = None) -> Projection:
    """`projection` for an (S, n, D) array."""
    V = np.asarray(V, dtype=np.float64)
    S, n, D = V.shape
    U = unit_rows(V)
    C = U - U.mean(axis=1, keepdims=True)  # (S, n, D)
    spread = np.sqrt((C**2).sum(-1).mean(1))  # (S,)
    spread = np.where(spread < 1e-9, 0.0, spread)  # one vector in every sentence (float noise aside)
    if same_size:
        C = np.where(spread[:, None, None] > 1e-9, C / np.maximum(spread, EPS)[:, None, None], 0.0)
    X = C.reshape(S * n, D)
    coords = np.zeros((S * n, 2))
    explained = [0.0, 0.0]
    total = float((X**2).sum())
    if total > EPS:
        _, sv, Vt = np.linalg.svd(X, full_matrices=False)
        for j in range(min(2, len(sv))):
            if sv[j] <= 1e-9 * sv[0]:
                break
            sign = 1.0 if Vt[j][np.argmax(np.abs(Vt[j]))] >= 0 else -1.0  # a fixed orientation
            coords[:, j] = X @ Vt[j] * sign
            explained[j] = float(sv[j] ** 2 / total)
    coords = coords.reshape(S, n, 2)
    if same_size:  # and the same size on the map: a step whose differences lie mostly off the two axes is no dot
        r = np.sqrt((coords**2).sum(-1).mean(1))  # (S,)
        coords = np.where(r[:, None, None] > 1e-9, coords / np.maximum(r, EPS)[:, None, None], 0.0)
    pad = 0.05 * max(float(np.ptp(coords[..., 0])), float(np.ptp(coords[..., 1])), 1e-6)
    bounds = (
        float(coords[..., 0].min()) - pad,
        float(coords[..., 0].max()) + pad,
        float(coords[..., 1].min()) - pad,
        float(coords[..., 1].max()) + pad,
    )
    return Projection(
        coords.astype(np.float32),
        (explained[0], explained[1]),
        bounds,
        spread,
        np.zeros(S) if noise is None else np.asarray(noise, dtype=np.float64),
    )


def mostly_rounding(pr: Projection, k: int, factor: float = 3.0) -> bool:
    """True when step k's points are so close together that the int8 rounding of the stored vectors is a large part
    of what the map shows (spread below `factor` times the rounding's)."""
    return bool(0 < pr.spread[k] < factor * pr.noise[k])


# -- series over steps -----------------------------------------------------------------------------------------
def losses(rp: Replay) -> dict[str, list]:
    """{"step", "tokens", "train" (None before training), "valid"} per snapshot."""
    return {
        "step": rp.steps,
        "tokens": [int(s.get("tokens") or 0) for s in rp.snapshots],
        "train": [s.get("train_loss") for s in rp.snapshots],
        "valid": [s.get("valid_loss") for s in rp.snapshots],
    }


def sense_accuracy(rp: Replay, word: str | None = None) -> np.ndarray:
    """(S, L): the mean sense accuracy over the sets per layer at each step, or one set's (`word`)."""
    if word is None:
        return np.array([s["sense_accuracy_mean"] for s in rp.snapshots], dtype=np.float64)
    return np.array([s["sense_accuracy"][word] for s in rp.snapshots], dtype=np.float64)


def chance(rp: Replay, word: str | None = None) -> float:
    """Accuracy of always answering the largest sense: per set, or the mean over the sets."""
    words = [word] if word else rp.words
    shares = []
    for w in words:
        labels = rp.labels(w)
        shares.append(max(labels.count(x) for x in set(labels)) / len(labels))
    return float(np.mean(shares))


# -- answers ---------------------------------------------------------------------------------------------------
def fill_mask_rows(rp: Replay, k: int) -> list[dict] | None:
    """BERT at snapshot k: [{"sentence", "answer" (what the blank was written for, or ""), "top": [(token, p)]}];
    None if the timeline recorded no fill-mask answers."""
    got = rp.snapshots[k].get("fill_mask")
    if not got:
        return None
    sents = rp.data.get("fill_mask_sentences") or []
    answers = _answers(sents)
    return [
        {"sentence": s, "answer": a, "top": [(str(t), float(p)) for t, p in top]}
        for s, a, top in zip(sents, answers, got)
    ]


def _answers(sentences: list[str]) -> list[str]:
    """The written-for answer of each fill-mask sentence (the recorder's own list, matched by text)."""
    known = dict(zip(tl.FILL_MASK_SENTENCES, tl.FILL_MASK_ANSWERS))
    return [known.get(s, "") for s in sentences]


def lm_rows(rp: Replay, k: int) -> list[dict] | None:
    """ELMo or GPT at snapshot k: [{"text", "word" (the word, or GPT's character, that is there), "prompt" (GPT: the
    text it continues), "forward": [(w, p)], "backward": [(w, p)] or None}]; None if not recorded."""
    got = rp.snapshots[k].get("lm")
    items = rp.data.get("lm_sentences") or []
    if not got or not items:
        return None
    rows = []
    for item, r in zip(items, got):
        start = item.get("start")
        rows.append(
            {
                "text": item["text"],
                "word": item["word"],
                "prompt": item["text"][:start] if start is not None else None,
                "forward": [(str(w), float(p)) for w, p in r.get("forward") or []],
                "backward": [(str(w), float(p)) for w, p in r["backward"]] if r.get("backward") else None,
            }
        )
    return rows


def answer_hits(rp: Replay) -> tuple[dict[str, list[int]], int] | None:
    """({"fill_mask"} (BERT) or {"forward", "backward"} (ELMo; GPT: "forward" only): per snapshot, how many sentences
    have the written-for answer as the top answer, the number of sentences with a known answer); None if no answers
    were recorded."""
    out: dict[str, list[int]] = {}
    if fill_mask_rows(rp, 0) is not None:
        rows = [fill_mask_rows(rp, k) or [] for k in range(len(rp.steps))]
        out["fill_mask"] = [
            sum(bool(r["top"]) and r["answer"] != "" and r["top"][0][0] == r["answer"] for r in rs) for rs in rows
        ]
        total = sum(r["answer"] != "" for r in rows[0])
    elif lm_rows(rp, 0) is not None:
        rows = [lm_rows(rp, k) or [] for k in range(len(rp.steps))]
        for d in ("forward", "backward"):
            if rows[0] and rows[0][0][d] is not None:
                out[d] = [sum(bool(r[d]) and r[d][0][0] == r["word"] for r in rs) for rs in rows]
        total = len(rows[0])
    else:
        return None
    return out, total


# -- attention ---------------------------------------------------------------------------------------------------
def attention_sentences(rp: Replay) -> list[tuple[str, list[str]]]:
    """[(sentence, tokens)] whose attention the timeline holds (empty if none was recorded)."""
    sents, toks = rp.data.get("attention_sentences") or [], rp.data.get("attention_tokens") or []
    return [(s, list(t)) for i, (s, t) in enumerate(zip(sents, toks)) if f"attention_{i}" in rp.arrays]


def attention(rp: Replay, i: int, k: int) -> np.ndarray | None:
    """(L, H, T, T) float32 attention of fixed sentence i at snapshot k, or None if not recorded."""
    a = rp.arrays.get(f"attention_{i}")
    return None if a is None else a[k].astype(np.float32)


def head_shares(rp: Replay, i: int) -> dict[str, np.ndarray] | None:
    """{share name: (S, L, H)} of fixed sentence i over the snapshots (viz.attention_stats.head_summaries' shares)."""
    from .viz.attention_stats import head_summaries

    sents = attention_sentences(rp)
    if i >= len(sents):
        return None
    tokens = sents[i][1]
    a = rp.arrays[f"attention_{i}"].astype(np.float32)  # (S, L, H, T, T)
    S, L, H = a.shape[:3]
    out = {m: np.zeros((S, L, H)) for m in SHARES}
    for k in range(S):
        for r in head_summaries(a[k], tokens, causal=rp.kind == "gpt"):
            for m in SHARES:
                out[m][k, r["layer"] - 1, r["head"] - 1] = r[m]
    return out


def nearest_index(steps: list[int], step) -> int:
    """The index of the recorded step closest to `step` (a link's ?step= that is not recorded)."""
    try:
        s = int(step)
    except (TypeError, ValueError):
        return len(steps) - 1
    return int(np.argmin([abs(x - s) for x in steps]))

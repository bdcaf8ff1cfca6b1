"""What the explorer pages compute (no Streamlit): a word's token vectors in the user's sentences, a
sample of its corpus occurrences, per-layer sense accuracy, and the tables and CSV files they offer.

- `word_profile(enc, texts, word)` -> `WordProfile`: the word's vector in each text and alone (its
  context-free "type" vector), from ONE encode() call, plus how each model cut the text.
- `explore_atlas.atlas_sample(enc, word, cap)` -> `AtlasSample`: token vectors at up to `cap` corpus occurrences,
  with one random other token per sentence as the anisotropy baseline (in explore_atlas.py).
- Per layer: `type_token_points` and `mean_type_cosine` (Type vs token), `atlas_colouring` and
  `self_similarity_curves` (Polysemy atlas).
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, replace

import numpy as np

from .analysis import anisotropy, layer_sense_accuracy, self_similarity
from .encoder import WordNotFound
from .explore_atlas import AtlasSample
from .vecmath import cosine, unit_rows

# The atlas opens on a word whose two roles the shipped models separate (measured with atlas_tag_accuracy on 300
# occurrences, tags seen >= 5 times; leave-one-out nearest centroid): 地 (u: 189, n: 20, majority 0.904) with ELMo:
# 0.981 at biLSTM layer 1, 0.976 at layer 2; BERT's top layer 0.933. 发展 (v/vn, majority 0.554): ELMo 0.805,
# BERT 0.753 at the top, but v and vn overlap on the map.
ATLAS_DEFAULT = {"word": "地", "model": "elmo"}


@dataclass
class WordProfile:
    """One word in n texts, for one model."""

    vecs: np.ndarray  # (n, n_layers, dim): the word's vector in each text, mean over its tokens
    pooled: list[list[str]]  # the tokens pooled into the word, per text
    segmentation: list[str]  # each text as the model cut it, the word's tokens in 【】
    type_vec: np.ndarray  # (n_layers, dim): the word encoded alone
    layer_names: list[str]
    truncated: list[bool]  # texts cut at the model's length limit
    in_vocab: bool
    word_level: bool  # False for character models (BERT)


def word_profile(enc, texts: list[str], word: str, cache: MutableMapping | None = None) -> WordProfile:
    """`word` in each text (first occurrence, mean over its tokens, as Encoder.word_vectors) and alone.
    The texts and the word alone share one batch. Raises WordNotFound naming the first text without the word.

    `cache` (optional, dict-like, shared between calls for ONE model): {(word, text): that text's row}. Texts found
    in it are not encoded again; the others are encoded in one batch and stored. A text's vectors do not depend on
    the other texts of its batch (padding is masked), so a class editing one sentence of ten encodes one."""
    texts = list(texts) + [word]
    rows: list = [None] * len(texts)
    if cache is not None:
        for i, t in enumerate(texts):
            rows[i] = cache.get((word, t))
    todo = [i for i, r in enumerate(rows) if r is None]
    if todo:
        for i, e in zip(todo, enc.encode([texts[i] for i in todo], target=word, batch_size=64, attentions=False)):
            idx = e.word_indices(word)
            if not idx:
                raise WordNotFound(word, i, e.text)
            rows[i] = (
                e.layers[:, idx, :].mean(1).astype(np.float32),  # (L, D)
                [e.tokens[j] for j in idx],
                " / ".join(("【" + tok + "】") if j in idx else tok for j, tok in enumerate(e.tokens)),
                bool(e.truncated),
                list(e.layer_names),
            )
        if cache is not None:
            for i in todo:
                cache[(word, texts[i])] = rows[i]
    v = np.stack([r[0] for r in rows])  # (n + 1, L, D)
    return WordProfile(
        vecs=v[:-1],
        pooled=[list(r[1]) for r in rows[:-1]],
        segmentation=[r[2] for r in rows[:-1]],
        type_vec=v[-1],
        layer_names=list(rows[0][4]),
        truncated=[r[3] for r in rows[:-1]],
        in_vocab=bool(enc.in_vocab(word)),
        word_level=bool(enc.word_level),
    )


def find_first(text: str, word: str) -> tuple[int, int]:
    """Span of the first occurrence of `word` (NFKC-insensitive), or (0, 0)."""
    from .tokens import find_all

    spans = find_all(text, word)
    return spans[0] if spans else (0, 0)


def nearest_rows(
    words: list[str],
    M: np.ndarray,
    vecs: np.ndarray,
    word: str,
    topn: int = 5,
    counts: Mapping[str, int] | None = None,
    min_count: int = 0,
) -> list[str]:
    """For each row of `vecs` (n, dim): the `topn` nearest of `words` (unit rows `M`, (n_words, dim)) other
    than `word`, as one string "w 0.83  w2 0.80 ...". With `counts` (word -> count in the training text), only words
    seen at least `min_count` times, each followed by its count: "w 0.83 (105)"."""
    keep = (
        np.arange(len(words))
        if counts is None
        else np.array([i for i, w in enumerate(words) if counts.get(w, 0) >= min_count], dtype=int)
    )
    V = unit_rows(vecs)
    out = []
    for row in V @ M[keep].T if len(keep) else np.zeros((len(V), 0)):
        best = [(words[keep[i]], row[i]) for i in np.argsort(-row)[: topn + 1] if words[keep[i]] != word][:topn]
        out.append("  ".join(f"{w} {s:.2f}" + ("" if counts is None else f" ({counts.get(w, 0):,})") for w, s in best))
    return out


def half_profile(d: WordProfile, half: str | None) -> WordProfile:
    """ELMo's forward ("forward": the first half of every layer) or backward ("backward") states of a profile; None:
    the profile itself. The type vector is halved too, so a token whose forward context equals the word alone (the
    word opens the sentence) sits exactly on it."""
    if half is None:
        return d
    from .triple import View, view_vectors

    n = d.vecs.shape[1]
    return replace(
        d,
        vecs=np.stack([view_vectors(d.vecs, View(j, half)) for j in range(n)], 1),
        type_vec=np.stack([view_vectors(d.type_vec[None], View(j, half))[0] for j in range(n)]),
    )


def at_edge(text: str, word: str, half: str) -> bool:
    """The first `word` in `text` opens it ("forward": nothing before it) or, "backward", closes it (nothing after
    it): there ELMo's forward (backward) LSTM has read only the word itself, as when the word is encoded alone."""
    from .tokens import find_all

    spans = find_all(text, word)
    if not spans:
        return False
    a, b = spans[0]
    return not text[:a].strip() if half == "forward" else not text[b:].strip()


SCALE_COLUMNS = ("model", "layer", "random_mean", "random_p95", "nearest_top1")


def scale_rows(
    scale: dict[str, tuple[float, float, float]], layer_names: dict[str, str], columns: dict[str, str]
) -> list[dict]:
    """The nearest-words tab's scale table: per model (`scale`: {model: (random pairs' mean cosine, their 95th
    percentile, a vocabulary word's typical nearest-neighbour cosine)}) one row, headed by `columns` (SCALE_COLUMNS
    -> shown names)."""
    return [
        dict(zip((columns[k] for k in SCALE_COLUMNS), (m, layer_names[m], *(round(float(x), 2) for x in v))))
        for m, v in scale.items()
    ]


def type_token_points(d: WordProfile, layer: int) -> np.ndarray:
    """(n + 1, dim): the type vector (row 0), then the token vectors, at one layer (the rows the map projects)."""
    return np.vstack([d.type_vec[layer][None], d.vecs[:, layer]])


def mean_type_cosine(d: WordProfile, layer: int) -> float:
    """Mean cosine of the token vectors to the type vector at one layer."""
    return float(np.mean([cosine(v, d.type_vec[layer]) for v in d.vecs[:, layer]]))


def same_depth(layer: int, n_from: int, n_to: int) -> int:
    """The layer of a model with `n_to` layers at the relative depth of `layer` in one with `n_from` (the bottom stays
    the bottom, the top stays the top; halves round up). From a one-layer model: the top layer."""
    if n_to <= 1:
        return 0
    if n_from <= 1:
        return n_to - 1
    return int(np.floor(min(max(layer, 0), n_from - 1) * (n_to - 1) / (n_from - 1) + 0.5))


def accuracy_rows(res: dict) -> list[dict]:
    """The table under the sense-accuracy chart: one row per model and layer (`res` from `sense_accuracy`)."""
    return [
        {"model": m, "layer": n, "accuracy": round(a, 3)} for m, (ns, accs) in res.items() for n, a in zip(ns, accs)
    ]


def atlas_colouring(
    d: AtlasSample, colour: str, layer: int, k: int, word: str, none_label: str, source_names: dict[str, str]
) -> tuple[list[str], dict | None]:
    """(a category per occurrence, {cluster: top context words} or None) for colour "pos" (the People's Daily tag,
    `none_label` for other sources), "source" (`source_names`) or "kmeans" (k cosine clusters C1..Ck at `layer`)."""
    from .projection import cluster_top_words, kmeans

    if colour == "kmeans":
        cats = [f"C{c + 1}" for c in kmeans(d.vecs[:, layer], k)]
        return cats, cluster_top_words(d.contexts, cats, topn=3, exclude=(word,))
    if colour == "source":
        return [source_names.get(s, s) for s in d.sources], None
    return [tag or none_label for tag in d.tags], None


def self_similarity_curves(d: AtlasSample) -> tuple[list[str], list[float], list[float]]:
    """(layer names, self-similarity per layer, anisotropy baseline per layer) of a sample (Ethayarajh 2019)."""
    n = len(d.layer_names)
    return (
        d.layer_names,
        [self_similarity(d.vecs[:, j]) for j in range(n)],
        [anisotropy(d.base[:, j]) for j in range(n)],
    )


def sense_accuracy(data: dict, labels: list) -> tuple[dict, float] | None:
    """({model: (layer names, LOO nearest-centroid accuracy per layer)}, majority-class rate) of the labelled
    sentences (`data`: {model: WordProfile}), or None when fewer than two labels have two sentences each."""
    idx = [i for i, lab in enumerate(labels) if lab]
    counts = Counter(labels[i] for i in idx)
    if len([c for c in counts.values() if c >= 2]) < 2:
        return None
    idx = [i for i in idx if counts[labels[i]] >= 2]
    y = [labels[i] for i in idx]
    chance = max(Counter(y).values()) / len(y)
    return {m: (d.layer_names, layer_sense_accuracy(d.vecs[idx], y)) for m, d in data.items()}, chance


def segmentation_table(data: dict, texts, sentence_col: str, pooled_col: str) -> dict[str, list[str]]:
    """Columns for the segmentation table: models with identical segmentations share a column
    ("word2vec / elmo"); character models get an extra column with the characters pooled into the word."""
    cols: dict[str, list[str]] = {sentence_col: list(texts)}
    groups: dict[tuple, list[str]] = {}
    for m, d in data.items():
        groups.setdefault(tuple(d.segmentation), []).append(m)
    for seg, ms in groups.items():
        cols[" / ".join(ms)] = list(seg)
    for m, d in data.items():
        if not d.word_level:
            cols[f"{m}: {pooled_col}"] = [" + ".join(p) for p in d.pooled]
    return cols


def _csv(header: list[str], rows) -> bytes:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(header)
    w.writerows(rows)
    return buf.getvalue().encode("utf-8-sig")  # BOM: Excel opens the Chinese text correctly


def vectors_csv(data: dict, texts, labels, word: str) -> bytes:
    """CSV of every model's, layer's and sentence's vector of the word ({model: WordProfile})."""
    dim = max((d.vecs.shape[2] for d in data.values()), default=0)
    rows = (
        [m, j, name, i + 1, s, labels[i] or "", word] + [f"{x:.6g}" for x in d.vecs[i, j]]
        for m, d in data.items()
        for j, name in enumerate(d.layer_names)
        for i, s in enumerate(texts)
    )
    return _csv(
        ["model", "layer", "layer_name", "sentence_no", "sentence", "label", "word"] + [f"d{k}" for k in range(dim)],
        rows,
    )


def atlas_csv(d: AtlasSample, layer: int, cats: list[str]) -> bytes:
    """CSV of the atlas at one layer: sentence, span, tag, source, colour category, vector."""
    X = d.vecs[:, layer]
    rows = (
        [s, *d.spans[i], d.tags[i] or "", d.sources[i], cats[i], d.layer_names[layer]] + [f"{x:.6g}" for x in X[i]]
        for i, s in enumerate(d.texts)
    )
    return _csv(
        ["sentence", "start", "end", "pos_tag", "source", "category", "layer_name"]
        + [f"d{k}" for k in range(X.shape[1])],
        rows,
    )


def atlas_tag_accuracy(d: AtlasSample, layer: int, min_count: int = 5) -> tuple[float, float, dict[str, int]] | None:
    """(leave-one-out nearest-centroid accuracy of the People's Daily tags at `layer`, the majority-tag rate, {tag:
    count}) over the tagged occurrences whose tag occurs at least `min_count` times: how well the layer separates the
    word's grammatical roles. None when fewer than two tags are that frequent."""
    from .analysis import loo_centroid_accuracy

    counts = Counter(t for t in d.tags if t)
    keep = [i for i, t in enumerate(d.tags) if t and counts[t] >= min_count]
    y = [d.tags[i] for i in keep]
    if len(set(y)) < 2:
        return None
    kept = Counter(y)
    return loo_centroid_accuracy(d.vecs[keep, layer], y), max(kept.values()) / len(y), dict(kept.most_common())


CHANCE_MARGIN = 0.05  # a layer within this of the majority rate has learnt nothing the labels show
FEW_PER_LABEL = 5  # fewer sentences than this in some label: leave-one-out centres are too noisy to read


def at_chance(accuracies, chance: float, margin: float = CHANCE_MARGIN) -> bool:
    """True when no accuracy beats the majority rate `chance` by more than `margin`."""
    return max(accuracies, default=0.0) <= chance + margin


def chance_diagnosis(labels: list, word_rows: list[dict], min_per_label: int = FEW_PER_LABEL) -> dict:
    """Why labelled sentences may sit at chance: {"smallest": (label, n) of the rarest label, "few": n < min_per_label,
    "corpus": {source: the word's occurrences in the training split} (corpus.word_table rows), "senses": {sense:
    training sentences} of the teaching supplement, "rare": the word occurs fewer than 20 times in training text}."""
    counts = Counter(lab for lab in labels if lab)
    smallest = min(counts.items(), key=lambda kv: (kv[1], str(kv[0]))) if counts else (None, 0)
    corpus_n = {r["source"]: int(r.get("train", 0)) for r in word_rows if r["source"] != "supplement"}
    senses = {r["sense"]: int(r.get("train", 0)) for r in word_rows if r["source"] == "supplement" and r["sense"]}
    return {
        "smallest": smallest,
        "few": smallest[1] < min_per_label,
        "corpus": corpus_n,
        "senses": senses,
        "rare": sum(corpus_n.values()) + sum(senses.values()) < 20,
    }

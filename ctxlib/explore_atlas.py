"""The Polysemy atlas's sample (no Streamlit): `atlas_sample(enc, word, cap)` -> `AtlasSample`, token vectors at
up to `cap` corpus occurrences of a word (each sentence cropped to ATLAS_WINDOW characters around it), with one
random other token per sentence as the anisotropy baseline; kept on disk (ctxlib.cache) for a loaded checkpoint.
What the atlas computes from a sample (colouring, curves, CSV, tag accuracy) is in explore.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

# characters of context kept around each occurrence (ELMo, 300 sentences: 60 -> ~10-20 s, 100 -> ~60 s)
ATLAS_WINDOW = 60


@dataclass
class AtlasSample:
    """A word's corpus occurrences (cropped to ATLAS_WINDOW characters) and their token vectors."""

    texts: list[str]
    spans: list[tuple[int, int]]
    tags: list[str | None]  # People's Daily POS tag, None for other sources
    sources: list[str]
    total: int  # occurrences in the corpus (before the cap)
    vecs: np.ndarray  # (n, n_layers, dim)
    base: np.ndarray  # (n, n_layers, dim): one random other token of the same sentence
    contexts: list[list[str]]  # the other words of each sentence (for cluster labels)
    layer_names: list[str] = field(default_factory=list)


def _crop(o, size: int):
    """The occurrence with its sentence cut to `size` characters centred on the word (spans shifted)."""
    if len(o.text) <= size:
        return o
    a = max(0, min(o.start - (size - (o.end - o.start)) // 2, len(o.text) - size))
    return replace(o, text=o.text[a : a + size], start=o.start - a, end=o.end - a)


def atlas_sample(enc, word: str, cap: int, seed: int = 0) -> AtlasSample:
    """Token vectors of `word` at up to `cap` corpus occurrences, plus one random other token per sentence."""
    from . import corpus

    occ, total = corpus.occurrences(word, cap=cap, seed=seed)
    window = min(ATLAS_WINDOW, enc.max_len - 4)
    occ = [_crop(o, window) for o in occ]  # the word must fall inside the model's length limit
    return _atlas_cached(enc, word, occ, total, seed)


def _atlas_cached(enc, word: str, occ: list, total: int, seed: int) -> AtlasSample:
    """`_atlas_encode`, kept on disk (ctxlib.cache) for a loaded checkpoint, keyed by its files and the occurrences."""
    from . import cache

    path = getattr(enc, "path", None)
    ck = cache.checkpoint_key(path) if path is not None else None
    k = (
        cache.key(
            "atlas", enc.kind, enc.name, ck, word, seed, total, [(o.text, o.start, o.end, o.tag, o.source) for o in occ]
        )
        if ck
        else None
    )

    def build():
        d = _atlas_encode(enc, word, occ, total, seed)
        return {"vecs": d.vecs, "base": d.base}, {
            "texts": d.texts,
            "spans": d.spans,
            "tags": d.tags,
            "sources": d.sources,
            "total": d.total,
            "contexts": d.contexts,
            "layer_names": d.layer_names,
        }

    arrays, m = cache.cached("atlas", k, build)
    try:
        return AtlasSample(
            texts=list(m["texts"]),
            spans=[tuple(x) for x in m["spans"]],
            tags=list(m["tags"]),
            sources=list(m["sources"]),
            total=int(m["total"]),
            vecs=arrays["vecs"],
            base=arrays["base"],
            contexts=[list(c) for c in m["contexts"]],
            layer_names=list(m["layer_names"]),
        )
    except (KeyError, TypeError, ValueError):  # an entry with the wrong contents: compute afresh
        return _atlas_encode(enc, word, occ, total, seed)


def _atlas_encode(enc, word: str, occ: list, total: int, seed: int) -> AtlasSample:
    from .tokens import segment

    rng = np.random.default_rng(seed)
    vecs, base, contexts, keep = [], [], [], []
    # One batch for all: a batch-size-independent result (ELMo's char-CNN pads words to the batch's longest word,
    # so its context-free layer otherwise differs between batches), and on CPU no slower than batches of 64.
    encs = enc.encode([o.text for o in occ], target=word, batch_size=max(1, len(occ))) if occ else []
    for o, e in zip(occ, encs):
        idx = e.token_indices(o.start, o.end)
        if not idx:
            continue
        others = [j for j, (a, b) in enumerate(e.spans) if b > a and j not in idx]
        vecs.append(e.layers[:, idx, :].mean(1))  # (L, D)
        base.append(e.layers[:, others[rng.integers(len(others))], :] if others else e.layers[:, idx[0], :])
        contexts.append([w for w, _, _ in segment(o.text, word) if w != word])
        keep.append(o)
    names = list(encs[0].layer_names) if encs else list(enc.layer_names)
    empty = np.zeros((0, len(names), enc.dim), np.float32)
    return AtlasSample(
        texts=[o.text for o in keep],
        spans=[(o.start, o.end) for o in keep],
        tags=[o.tag for o in keep],
        sources=[o.source for o in keep],
        total=total,
        vecs=np.stack(vecs).astype(np.float32) if vecs else empty,
        base=np.stack(base).astype(np.float32) if base else empty,
        contexts=contexts,
        layer_names=names,
    )

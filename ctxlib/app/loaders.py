"""Cached loading and computing for the pages: models once per server, results per input.

Everything here goes through `load_encoder` by name (tests swap it for fakes), and the cached results
are keyed by plain strings and tuples; `model_stamp` changes when a model's checkpoint changes.
"""

from __future__ import annotations

import collections
import collections.abc
import contextlib
import itertools
import threading

import numpy as np
import streamlit as st

import ctxlib
from ctxlib import checkpoint, explore, explore_atlas, kinds, registered
from ctxlib.viz.common import freeze

from .i18n import lang, msg
from .memo import memo


def model_order() -> tuple[str, ...]:
    """The models pages list, in order: the shipped kinds (a missing one is named with its build command), then the
    models a teacher registered (CTXLAB_MODELS, models.toml)."""
    return (*kinds.names(shipped=True), *(e.name for e in registered.extra_models()))


NEAREST_VOCAB = 3000  # most frequent vocabulary words searched for nearest neighbours (contextual models)


# session: {"live: bert-3": its checkpoint folder} (the training page's "Use this model")
LIVE_KEY = "ctxlab_live_models"
LIVE_PREFIX = "live: "  # how a live model's name begins (a link may name one of another session's)


def live_models() -> dict[str, str]:
    """This session's live-trained models the pickers offer after the shipped ones (name -> checkpoint folder)."""
    return dict(st.session_state.get(LIVE_KEY) or {})


LOADED: set[str] = set()  # models load_encoder has loaded in this process (their spinners can be skipped)


# name or source -> Encoder, for the process's life: what st.cache_resource held, minus the argument hashing it paid
# on each of a page run's ~17 calls; the lock makes one load per model however many sessions ask at once
_MODELS: dict = {}
_MODELS_LOCK = threading.Lock()


def _load(name_or_path: str):
    enc = _MODELS.get(name_or_path)
    if enc is None:
        with _MODELS_LOCK:
            enc = _MODELS.get(name_or_path)
            if enc is None:
                enc = _MODELS[name_or_path] = ctxlib.load(name_or_path)
                LOADED.add(name_or_path)
    return enc


_load.clear = _MODELS.clear


@st.cache_resource(show_spinner=False, max_entries=8)
def _load_live(path: str):
    return ctxlib.load(path)


def load_encoder(name: str):
    """A loaded Encoder, cached across reruns and sessions (a live model by its folder, so per session; a registered
    model by its source)."""
    path = live_models().get(name)
    if path is not None:
        return _load_live(path)
    enc = _load(registered.source_of(name) or name)
    LOADED.add(name)
    return enc


load_encoder.clear = _load.clear


_DONE: dict = {}  # keys of blocks `busy` has seen finish (insertion-ordered, the oldest dropped past 4096)


@contextlib.contextmanager
def busy(text: str, key=None, needed: bool = True):
    """st.spinner(text) around a block that may be slow; none when `needed` is False or the block already finished once
    for `key` (hashable: what the block computes, so a cached result comes back at once). A spinner costs a thread and
    two messages per script run, which a rerun with everything cached does not need."""
    if not needed or (key is not None and key in _DONE):
        yield
        return
    with st.spinner(text):
        yield
    if key is not None:
        _DONE[key] = None
        if len(_DONE) > 4096:
            _DONE.pop(next(iter(_DONE)))


def try_load(name: str):
    """(encoder, None) or (None, message naming the rebuild command)."""
    try:
        return load_encoder(name), None
    except checkpoint.CheckpointError as e:
        return None, str(e)
    except Exception as e:  # a broken checkpoint or model folder must not take the page down
        if registered.source_of(name):
            return None, f"{name}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        return None, f"{name}: {type(e).__name__}: {e}. Rebuild with: {checkpoint.rebuild_command(name)}"


def model_status() -> dict[str, str | None]:
    """{model name: None if loadable else the message to show}, for every model in model_order(), then live models."""
    return {name: try_load(name)[1] for name in (*model_order(), *live_models())}


def models_for(view: str) -> list[str]:
    """The loadable models (model_order(), then live ones) that `view` takes (kinds.FAMILY_VIEWS: "attention",
    "fill_mask", "generate", "nsp", "elmo", "vectors")."""
    return [m for m, err in model_status().items() if err is None and view in kinds.views_of(load_encoder(m))]


def is_registered(name: str) -> bool:
    """A model a teacher registered (CTXLAB_MODELS, models.toml), not a shipped or live one."""
    return registered.source_of(name) is not None


_STAMPS = itertools.count(1)


def _object_token(enc) -> int:
    """A number unique to this encoder object for the process's life (id() is reused once an object is freed, so a
    new model loaded at an old one's address would hit the old one's cache entries)."""
    tok = getattr(enc, "_ctxlab_token", None)
    if tok is None:
        tok = next(_STAMPS)
        try:
            enc._ctxlab_token = tok
        except AttributeError:  # an object without a __dict__: fall back to its id
            return id(enc)
    return tok


def model_stamp(name: str) -> str:
    """A string that changes when the loaded model changes (cache key part for st.cache_data)."""
    enc, _ = try_load(name)
    if enc is None:
        return "missing"
    path = getattr(enc, "path", None)
    mtime = ""
    try:
        mtime = str((path / "config.json").stat().st_mtime_ns) if path else ""
    except OSError:
        pass
    return f"{name}:{path}:{mtime}:{_object_token(enc)}"


class TextRows(collections.abc.MutableMapping):
    """A bounded, thread-safe LRU dict: the per-(word, text) rows `explore.word_profile` reuses, for one model stamp
    (students share most sentences, and an edit changes one of ten; a row is a few kB)."""

    def __init__(self, maxsize: int = 2048):
        self.maxsize, self._d, self._lock = maxsize, collections.OrderedDict(), threading.Lock()

    def __getitem__(self, k):
        with self._lock:
            v = self._d[k]
            self._d.move_to_end(k)
            return v

    def __setitem__(self, k, v):
        with self._lock:
            self._d[k] = v
            self._d.move_to_end(k)
            while len(self._d) > self.maxsize:
                self._d.popitem(last=False)

    def __delitem__(self, k):
        with self._lock:
            del self._d[k]

    def __iter__(self):
        with self._lock:
            return iter(list(self._d))

    def __len__(self):
        return len(self._d)


@st.cache_resource(show_spinner=False, max_entries=16)
def text_rows(model: str, stamp: str) -> TextRows:
    """The per-text row cache of one loaded model (a new stamp, a new cache)."""
    return TextRows()


@memo(256)
def word_tokens(model: str, word: str, texts: tuple[str, ...], stamp: str) -> explore.WordProfile:
    """Cached `explore.word_profile` for a loaded model (`stamp` = model_stamp(model)), shared by every session (read
    only, ctxlib.app.memo); texts already encoded for this word by any session (`text_rows`) are not encoded again."""
    return explore.word_profile(load_encoder(model), list(texts), word, cache=text_rows(model, stamp))


@st.cache_resource(show_spinner=False, max_entries=8)
def vocab_matrix(model: str, stamp: str) -> tuple[list[str], np.ndarray]:
    """(words, (n, n_layers, dim) unit vectors): Encoder.type_matrix of the NEAREST_VOCAB most frequent words."""
    words, m = load_encoder(model).type_matrix(NEAREST_VOCAB)
    return list(words), m


@st.cache_data(show_spinner=False, max_entries=256)
def nearest_table(
    model: str, word: str, texts: tuple[str, ...], layer: int, stamp: str, topn: int = 5, min_count: int = 0
) -> list[str]:
    """For each text: the nearest vocabulary words (encoded alone) to the word's token vector at `layer`, those seen
    at least `min_count` times in the model's training text, each with its count (lexicon.counts_for)."""
    from ctxlib.lexicon import counts_for

    words, M = vocab_matrix(model, stamp)
    vecs = word_tokens(model, word, texts, stamp).vecs[:, layer, :]
    return explore.nearest_rows(
        words, M[:, layer, :], vecs, word, topn, counts_for(load_encoder(model).summary or {}), min_count
    )


@st.cache_data(show_spinner=False, max_entries=32)
def atlas_vectors(model: str, word: str, cap: int, stamp: str) -> explore_atlas.AtlasSample:
    return explore_atlas.atlas_sample(load_encoder(model), word, cap)


@memo(64, key=lambda key, _X, method: (key, method))
def _projected(key: str, _X: np.ndarray, method: str) -> np.ndarray:
    from ctxlib.projection import project

    return project(_X, method)


def projected(key: str, X: np.ndarray, method: str) -> np.ndarray:
    """Cached 2-D projection; `key` names the data (model/word/sentences/layer), so X is never hashed.
    t-SNE and UMAP get a spinner: UMAP's first use in a server compiles numba code (up to a minute on a busy CPU)."""
    if method == "pca":
        return _projected(key, X, method)
    with busy(
        msg("common.computing_umap" if method == "umap" else "common.computing_tsne"), ("projected", key, method)
    ):
        return _projected(key, X, method)


@st.cache_data(show_spinner=False, max_entries=32)
def _csv_bytes(key: str, _data: dict, texts: tuple, labels: tuple, word: str) -> bytes:
    return explore.vectors_csv(_data, texts, labels, word)


def vectors_csv(data: dict, texts: tuple, labels: list, word: str) -> bytes:
    """Cached `explore.vectors_csv`."""
    key = f"{[(m, model_stamp(m)) for m in data]}|{word}|{texts}|{labels}"
    return _csv_bytes(key, data, tuple(texts), tuple(labels), word)


@memo(512, key=lambda key, _build: key)
def _figure_cache(key: str, _build):
    return freeze(_build())


def cached_figure(key: str, build):
    """`build()` once per `key` (a string naming everything the figure shows; the language is added here), frozen.

    Building Plotly figures (validation) is most of a warm rerun's time; st.plotly_chart does not mutate them."""
    return _figure_cache(f"{lang()}|{key}", build)


@st.cache_resource(show_spinner=False, max_entries=64)
def _bytes_cache(key: str, _build) -> bytes:
    return _build()


def cached_bytes(key: str, build) -> bytes:
    """`build()` (a download's bytes) once per `key`, a string naming everything in it: a CSV of a few hundred
    vectors takes ~0.1 s to format, on every rerun otherwise."""
    return _bytes_cache(key, build)


def _trim(obj, n: int = 12):
    """Long lists (loss histories) shortened for display."""
    if isinstance(obj, dict):
        return {k: _trim(v, n) for k, v in obj.items()}
    if isinstance(obj, list) and len(obj) > n:
        return (
            [_trim(v, n) for v in obj[: n // 2]]
            + [f"… {len(obj) - n} more …"]
            + [_trim(v, n) for v in obj[-(n // 2) :]]
        )
    return obj


def model_record(name: str) -> dict:
    """config.json's config and summary of a loaded model, long lists trimmed."""
    enc = load_encoder(name)
    return _trim({"kind": enc.kind, "layers": list(enc.layer_names), "config": enc.config, "summary": enc.summary})

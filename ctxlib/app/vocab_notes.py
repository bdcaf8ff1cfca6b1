"""Unseen words flagged per model (home and Type vs token), and the scale nearest-word cosines are read on.

The numbers are `ctxlib.triple`'s; this module caches them and words the messages."""

from __future__ import annotations

import streamlit as st

from ctxlib import explore, lexicon, triple
from ctxlib.vecmath import unit_rows

from . import loaders, state, text_fit, widgets
from .i18n import escape_md, msg
from .memo import memo


@memo(256)
def status(model: str, word: str, stamp: str) -> triple.VocabStatus:
    """`triple.vocab_status` of a loaded model (`stamp` = loaders.model_stamp(model))."""
    return triple.vocab_status(loaders.load_encoder(model), word)


def show(statuses: dict[str, triple.VocabStatus], word: str, where=st) -> None:
    """One message per model that has not seen `word` (or some of its characters); when any has not, a line saying
    which character models read every character of it."""
    for m, vs in statuses.items():
        if vs.status == "missing":
            where.warning(escape_md(msg("triple.unseen.missing", model=m, word=word)))
        elif vs.status == "chars":
            where.info(escape_md(msg("triple.unseen.chars", model=m, word=word)))
        elif vs.status == "unk_chars":
            where.warning(escape_md(msg("triple.unseen.unk_chars", model=m, chars=" ".join(vs.unk))))
    readers = [m for m, vs in statuses.items() if vs.status == "known" and not loaders.load_encoder(m).word_level]
    if readers and any(vs.status != "known" for vs in statuses.values()):
        where.caption(escape_md(msg("triple.unseen.known_chars", models=", ".join(readers), word=word)))


def _vocab(model: str, layer: int, stamp: str, half: str | None):
    """(words, unit rows) of the vocabulary `loaders.nearest_table` searches, at `layer` (ELMo: one half of it)."""
    words, M = loaders.vocab_matrix(model, stamp)
    X = triple.view_vectors(M, triple.View(layer, half))
    return words, unit_rows(X)


@st.cache_data(show_spinner=False, max_entries=64)
def nearest_scale(model: str, layer: int, stamp: str, half: str | None = None) -> tuple[float, float, float]:
    """(mean, 95th percentile) of random vocabulary pairs' cosine, and a vocabulary word's typical nearest-neighbour
    cosine, at `layer` (ELMo: `half` of it): over the words the nearest-word search uses."""
    _, X = _vocab(model, layer, stamp, half)
    mean, p95 = triple.random_pair_cosines(X)
    return mean, p95, triple.nearest_top1(X)


@st.cache_data(show_spinner=False, max_entries=64)
def nearest_half(
    model: str, word: str, texts: tuple[str, ...], layer: int, stamp: str, half: str, min_count: int = 0
) -> list[str]:
    """`loaders.nearest_table` for one half of an ELMo layer: the word's half-vectors against the vocabulary's."""
    words, X = _vocab(model, layer, stamp, half)
    V = triple.view_vectors(loaders.word_tokens(model, word, texts, stamp).vecs, triple.View(layer, half))
    return explore.nearest_rows(
        words, X, V, word, 5, lexicon.counts_for(loaders.load_encoder(model).summary or {}), min_count
    )


@st.fragment
def nearest_tab(
    data: dict, stamps: dict, layers: dict, half: str | None, word: str, texts: tuple[str, ...], sentence_col: str
) -> None:
    """Type vs token's nearest-words tab (its switch and frequency floor rerun only this tab): for each sentence and
    model, the vocabulary words nearest to the word's token vector, seen at least `floor` times in the training text,
    each with its count; then the scale the cosines are read on."""
    st.caption(msg("type_token.nearest.caption"))
    near = state.choice("tt_near", "near", ["0", "1"], what=msg("common.url.what_flag")) == "1"
    if not st.toggle(
        msg("type_token.nearest.toggle"), value=near, key="tt_near_w", on_change=state.flag, args=("tt_near_w", "near")
    ):
        return
    floor = text_fit.floor_input("tt_floor")
    hs = {m: half if m == "elmo" else None for m in data}
    with loaders.busy(
        msg("type_token.nearest.encoding"),
        ("nearest", tuple(stamps.items()), word, texts, tuple(layers.items()), half, floor),
    ):
        scale = {m: nearest_scale(m, layers[m], stamps[m], hs[m]) for m in data}
        st.table(
            {
                sentence_col: texts,
                **{
                    msg("type_token.nearest.column", model=m, mean=scale[m][0]): (
                        nearest_half(m, word, texts, layers[m], stamps[m], hs[m], floor)
                        if hs[m]
                        else loaders.nearest_table(m, word, texts, layers[m], stamps[m], min_count=floor)
                    )
                    for m in data
                },
            }
        )
    st.caption(msg("textfit.floor_caption", floor=floor))
    if any(text_fit.counts_for(m) is None for m in data):
        st.caption(msg("textfit.floor_off"))
    st.caption(msg("type_token.nearest.scale_caption"))
    st.dataframe(
        explore.scale_rows(
            scale,
            {m: widgets.layer_label(d.layer_names[layers[m]]) for m, d in data.items()},
            {k: msg(f"type_token.nearest.col.{k}") for k in explore.SCALE_COLUMNS},
        ),
        hide_index=True,
    )

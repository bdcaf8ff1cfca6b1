"""The home demo's honesty notes: where jieba would have cut the word differently, the noise band of each layer, the
summary of whole layers only (ELMo's halves on a line of their own), and the notes folded into one expander.

The numbers are `ctxlib.triple`'s; this module caches them and words the messages."""

from __future__ import annotations

import streamlit as st

from ctxlib import triple
from ctxlib.examples import EXAMPLE_SETS
from ctxlib.tokens import show_split

from . import loaders
from .i18n import escape_md, msg


@st.cache_data(show_spinner=False, max_entries=16)
def noise(model: str, stamp: str) -> dict[triple.View, float]:
    """`triple.example_noise` of a loaded model ({view: band}; also kept on disk per checkpoint)."""
    return triple.example_noise(loaders.load_encoder(model))


def split_notes(cols, word: str, texts, models: list[str]) -> None:
    """Under each sentence where jieba alone would not make `word` its own token: jieba's segmentation and the one
    the word models (`models`, loaded and with a result) read, the word in 【】. Nothing without a word model."""
    if not models:
        return
    for k, col, sp in zip("ABC", cols, triple.segmentations(word, texts)):
        if sp is not None and sp.carved:
            col.info(
                escape_md(
                    msg(
                        "home_demo.split.carved",
                        sentence=k,
                        word=word,
                        natural=show_split(sp.natural),
                        host=sp.host,
                        models=", ".join(models),
                        forced=show_split(sp.forced, sp.index),
                    )
                )
            )


def verdict_lines(model: str, rows: list[triple.MarginRow], bands: dict | None, label) -> list[str]:
    """The summary's Markdown lines for one model: its whole layers' verdict (`triple.verdict`: a winner only beyond
    the noise band), then, for ELMo, its halves' largest margin on a line of its own. `label(view)` names a row."""
    v = triple.verdict(rows, bands)
    if v is None:  # every whole layer is context-free (word2vec): the notes say why
        return []
    values = dict(model=model, layer=label(v.row.view), margin=v.row.margin, band=v.band or 0.0)
    if v.band is None:  # no band measured: the plain reading, as before the band
        key = "triple.best" if v.outcome == "same" else "triple.none_right"
    else:
        key = f"home_demo.verdict.{v.outcome}"
    lines = ["- " + escape_md(msg(key, **values))]
    half = triple.best_row([r for r in rows if r.view.half is not None])
    if half is not None:
        b = (bands or {}).get(half.view)
        key = "home_demo.verdict.halves_noise" if triple.inside_band(half.margin, b) else "home_demo.verdict.halves"
        lines.append(
            "  - " + escape_md(msg(key, model=model, layer=label(half.view), margin=half.margin, band=b or 0.0))
        )
    return lines


def notice() -> None:
    """The one sentence left visible under the chart: what to notice, and what the grey band means."""
    st.caption(msg("home_demo.notice", share=triple.NOISE_Q))


def how_to_read(notes: list[str], banded: bool) -> None:
    """Every explanatory paragraph under the chart, in one closed expander (the noise band's first, when drawn)."""
    if banded:
        n = sum(len(ex["sentences"]) for ex in EXAMPLE_SETS.values())
        notes = [msg("home_demo.band_note", sets=len(EXAMPLE_SETS), sentences=n, share=triple.NOISE_Q), *notes]
    with st.expander(msg("home_demo.how_to_read")):
        st.caption("\n\n".join(notes))

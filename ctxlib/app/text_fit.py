"""What keeps free text a model writes or ranks fit for a classroom (the numbers are ctxlib's, the words here):
the note naming the training text and the model's size (ctxlib.model_card), the names switch that presentation mode
turns on, and the frequency floor of nearest-word lists (ctxlib.lexicon's counts)."""
from __future__ import annotations

import streamlit as st

from ctxlib import lexicon, model_card

from . import loaders, present, state
from .i18n import msg

FLOOR = 100  # default minimum training-text count of a word shown as a nearest neighbour (see README/report: 苹果)
FLOOR_MAX = 5000


@st.cache_data(show_spinner=False, max_entries=16)
def _facts(model: str, stamp: str) -> dict:
    return model_card.facts(loaders.load_encoder(model))


def model_note(model: str, stamp: str, where=st) -> None:
    """The note above a model's output: what it was trained on (its checkpoint summary) and its size (counted)."""
    f = _facts(model, stamp)
    text = " + ".join(msg(f"textfit.source.{s}") for s in f["sources"]) or msg("textfit.source.unknown")
    size = (msg("textfit.size", params=f"{f['parameters'] / 1e6:.1f}", layers=f["layers"]) if f["parameters"]
            else msg("textfit.size_layers", layers=f["layers"]))
    where.info(msg("textfit.note", model=f["kind"], text=text, size=size))  # our strings only: no user text


def names_checkbox(key: str) -> bool:
    """"Leave out people's names": on by default in presentation mode (following the mode when it is switched),
    otherwise off; the teacher can always change it."""
    mode = present.is_on()
    if st.session_state.get(key + "_mode") != mode:
        st.session_state[key] = mode
        st.session_state[key + "_mode"] = mode
    return st.checkbox(msg("textfit.no_names"), key=key, help=msg("textfit.no_names_help"))


def floor_input(key: str, where=st) -> int:
    """The frequency floor of nearest-word lists: a number input (URL ?floor=), default FLOOR."""
    state.integer(key, "floor", FLOOR, 0, FLOOR_MAX)
    v = where.number_input(msg("textfit.floor"), 0, FLOOR_MAX, step=10, key=key, help=msg("textfit.floor_help"))
    st.query_params["floor"] = str(int(v))
    return int(v)


def counts_for(model: str):
    """The word counts of a model's training text (None for a model trained on a user's corpus: no floor)."""
    return lexicon.counts_for(loaders.load_encoder(model).summary or {})

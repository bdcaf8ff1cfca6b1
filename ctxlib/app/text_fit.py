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
    size = (
        msg("textfit.size", params=f"{f['parameters'] / 1e6:.1f}", layers=f["layers"])
        if f["parameters"]
        else msg("textfit.size_layers", layers=f["layers"])
    )
    if "outside" in f["sources"]:  # a registered Transformers model; its name has no markdown characters
        where.info(msg("textfit.note_outside", model=model, text=text, size=size))
    else:
        where.info(msg("textfit.note", model=f["kind"], text=text, size=size))  # our strings only: no user text


def names_checkbox(key: str) -> bool:
    """ "Leave out people's names": on by default in presentation mode (following the mode when it is switched),
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


def outside_fill_mask(masked: str, topk: int, originals, ask) -> None:
    """The same [MASK]s answered by every registered masked LM (a real pretrained model, CTXLAB_MODELS), each under
    its own note, beside the small BERT's answers; `ask(model, method, stamp, ...)` is the page's cached call.
    A model whose vocabulary is English is left out of Chinese text (its answers would be noise)."""
    from ctxlib.viz import pretraining as vp

    cjk = any("\u4e00" <= c <= "\u9fff" for c in masked)
    for m in (m for m in loaders.models_for("fill_mask") if loaders.is_registered(m)):
        enc = loaders.load_encoder(m)
        if cjk and getattr(enc, "language", "zh") != "zh":
            continue
        st.markdown(msg("textfit.outside_header", model=m))  # a registered name has no markdown characters
        stamp = loaders.model_stamp(m)
        try:
            res = ask(m, "fill_mask", stamp, masked, topk=topk, originals=originals)
        except ValueError as e:
            st.warning(msg("textfit.outside_failed", model=m, error=str(e)[:200]))
            continue
        model_note(m, stamp)
        st.plotly_chart(
            vp.fill_mask_figure(
                res, originals, msg("pretraining.mask.panel"), msg("pretraining.lm.rank"), msg("pretraining.lm.unknown")
            ),
            width="stretch",
            key=f"pt_outside_{m}",
        )

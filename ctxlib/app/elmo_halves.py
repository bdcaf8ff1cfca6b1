"""ELMo's forward and backward halves on the Type vs token page: a sidebar choice (?half=) that swaps ELMo's profile
for one half of every layer, and says where a half cannot differ from the word alone."""

from __future__ import annotations

import streamlit as st

from ctxlib import explore
from ctxlib.examples import Numbers

from . import state
from .i18n import msg

HALVES = ["both", "forward", "backward"]


def picker(data: dict, texts, word: str) -> str | None:
    """When ELMo is shown: the sidebar radio; ELMo's profile in `data` replaced by the chosen half (in place).
    Returns "forward", "backward" or None (both halves)."""
    if "elmo" not in data:
        return None
    labels = [
        msg(f"type_token.half.{h}") for h in HALVES
    ]  # a list, not msg itself: AppTest formats outside the session
    first = state.choice("tt_half", "half", HALVES, what=msg("common.url.what_choice"))
    k = st.sidebar.radio(
        msg("type_token.sidebar.elmo_half"),
        range(len(HALVES)),
        index=HALVES.index(first),
        key="tt_half_w",
        format_func=labels.__getitem__,
        help=msg("type_token.half.help"),
    )
    st.query_params["half"] = pick = HALVES[k]
    if pick == "both":
        return None
    data["elmo"] = explore.half_profile(data["elmo"], pick)
    if edge := [i + 1 for i, s in enumerate(texts) if explore.at_edge(s, word, pick)]:
        st.caption(msg(f"type_token.half.on_type_{pick}", nums=Numbers(tuple(edge))))
    return pick

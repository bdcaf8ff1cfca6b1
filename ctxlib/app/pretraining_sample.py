"""The pre-training page's opening example (section 2): not seed 0's draw, which may be an odd pair (a cut review,
Latin letters), but the lesson's choice, `lesson_compute.clean_example`: the first example from seed 0 on whose pair is
clean and which BERT's next-sentence head classifies right. The page says so under the example; another seed (the
URL's, New example, one typed in) shows that seed's draw as it comes."""

from __future__ import annotations

import streamlit as st

from ctxlib import lesson_compute

from . import state
from .i18n import escape_md, msg


@st.cache_data(show_spinner=False, max_entries=8)
def _opening(stamp: str, _enc, _paragraphs) -> tuple[int, bool]:
    """(seed, found) of the clean example from seed 0, for the checkpoint `stamp` (the arguments with _ are not keys)."""
    found = lesson_compute.clean_example(_enc, _paragraphs, 0)
    return found["seed"], found["found"]


def init_seed(enc, stamp: str, paragraphs) -> tuple[int, bool]:
    """Put the opening seed in the session (unless ?seed= names one) before the seed field is drawn; returns the
    opening (seed, found)."""
    opening = _opening(stamp, enc, paragraphs)
    state.init("pt_seed", "seed", str(opening[0]))
    return opening


def nsp_lines(ex: dict, p_next: float, seed: int, opening: tuple[int, bool]) -> None:
    """The example's NSP label and the model's P(IsNext), the pair itself, and how the opening example was chosen."""
    label = msg("pretraining.example.is_next") if ex["is_next"] else msg("pretraining.example.not_next")
    st.markdown(msg("pretraining.example.nsp", label=label, p=p_next))
    st.caption("A: " + escape_md(ex["a_text"]) + "  \nB: " + escape_md(ex["b_text"]))
    if seed == opening[0]:
        found = msg("pretraining_sample.opening", seed=seed, search=lesson_compute.EXAMPLE_SEARCH)
        st.caption(found if opening[1] else msg("pretraining_sample.none", end=lesson_compute.EXAMPLE_SEARCH))

"""Parts of the Polysemy atlas page (pages/2_Polysemy_atlas.py): the self-similarity section under the map."""

import streamlit as st

from ctxlib import explore
from ctxlib.app import loaders, widgets
from ctxlib.app.i18n import msg
from ctxlib.viz import explorer
from ctxlib.viz.common import PLOTLY_CONFIG


def self_similarity(d, model, word, cap):
    """Self-similarity per layer of the word's occurrences (Ethayarajh 2019), for this model or every loaded one."""
    others = [m for m in loaders.model_order() if m != model and loaders.try_load(m)[1] is None]
    compare = st.checkbox(msg("atlas.selfsim.compare"), key="at_compare", disabled=not others)
    sims = {}
    for m in [m for m in loaders.model_order() if m == model or (compare and m in others)]:  # one order in every chart
        with loaders.busy(msg("atlas.selfsim.encoding", model=m), ("atlas", m, word, int(cap), loaders.model_stamp(m))):
            dm = d if m == model else loaders.atlas_vectors(m, word, int(cap), loaders.model_stamp(m))
        sims[m] = (widgets.layer_labels(dm.layer_names), *explore.self_similarity_curves(dm)[1:])
    st.caption(msg("atlas.selfsim.caption"))
    st.plotly_chart(
        loaders.cached_figure(
            f"selfsim|{word}|{sims}",
            lambda: explorer.self_similarity_chart(
                sims,
                title=msg("atlas.selfsim.chart_title", word=word),
                self_name=msg("atlas.selfsim.self_name"),
                base_name=msg("atlas.selfsim.base_name"),
                x_title=msg("atlas.selfsim.x_title"),
            ),
        ),
        config=PLOTLY_CONFIG,
        key="selfsim",
    )

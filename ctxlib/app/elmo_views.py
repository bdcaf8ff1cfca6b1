"""Parts of the ELMo layers page (pages/3_ELMo_layers.py) kept out of it: the nearest words of each layer (with the
frequency floor and counts, ctxlib/app/text_fit.py) and the live mix-training views."""

from __future__ import annotations

import streamlit as st

from ctxlib.viz import elmo as ve

from . import loaders, text_fit
from .i18n import msg


def nearest_section(layers, layer_names: list[str], pos: int, token: str) -> None:
    """A switch; when on, the vocabulary words nearest to the token's vector in each layer, seen at least the floor's
    count in the training text, each with its count."""
    if not st.toggle(msg("elmo.vectors.nearest"), key="elmo_nn"):
        return
    floor = text_fit.floor_input("elmo_floor")
    enc = loaders.load_encoder("elmo")
    counts = text_fit.counts_for("elmo")
    with st.spinner(msg("elmo.vectors.encoding")):
        rows = ve.nearest_rows(enc, layers, layer_names, pos, exclude=(token,), counts=counts, min_count=floor)
    st.table({msg("elmo.vectors.layer"): list(rows), msg("elmo.vectors.nearest_col"): list(rows.values())})
    st.caption(msg("textfit.floor_caption", floor=floor) if counts is not None else msg("textfit.floor_off"))


def mix_views(short: list[str], tasks: dict[str, str]):
    """(live_view, partial_view) for the mix-training job panel: the weights so far, while the job runs and after a
    cancel (then also the weights kept)."""

    def mix_plot(job):
        p = job.partial or {}
        if job.points:
            st.plotly_chart(
                ve.mix_history_figure(
                    list(job.points),
                    short,
                    f"{tasks.get(p.get('task'), '')}, λ = {p.get('l2')}",
                    msg("labels.axis.step"),
                ),
                width="stretch",
                key=f"elmo_live_plot_{job.state}",
            )

    def mix_kept(job):
        mix_plot(job)
        if (job.partial or {}).get("mix_weights"):
            st.write(
                msg(
                    "elmo_live.kept",
                    step=job.partial["step"],
                    weights=", ".join(f"{x:.3f}" for x in job.partial["mix_weights"]),
                )
            )

    return mix_plot, mix_kept

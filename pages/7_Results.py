"""Results: the lecture's claims (the papers' findings) against this app's own models, read from the eval files in
checkpoints/ each time the page opens (ctxlib.results builds the measures, ctxlib.verdict judges them). Outside
pretrained models' eval files, named in CTXLAB_EXTRA_EVALS, sit beside ours and count in no verdict."""

import time

import streamlit as st

from ctxlib import results
from ctxlib.app import results_view as rv
from ctxlib.app import widgets
from ctxlib.app.i18n import msg

_t0 = time.perf_counter()
widgets.page_header("Results", "results.title")
st.markdown(msg("results.intro"))
st.info(msg("results.rule"))
extra, bad = rv.outside_models()
for entry in bad:
    st.warning(msg("results.outside_bad", entry=entry))
found, empty = rv.outside_lines(extra)
if found:
    st.info(msg("results.outside_intro", models="; ".join(found)))
for line in empty:
    st.warning(line)
claims = results.claims(extra_dirs=extra)  # a dozen small JSON files: read afresh, so a new eval shows at once

st.subheader(msg("results.summary"))
st.dataframe(rv.overview_rows(claims), hide_index=True)

for i, c in enumerate(claims, 1):
    with st.container(border=True):
        st.markdown(f"#### {i}. {msg(f'results.short.{c.key}')}")
        st.markdown(rv.text(c, "claim"))
        st.markdown(f"**:{rv.COLOURS[c.verdict]}[{msg(f'results.verdict.{c.verdict}')}]** · {rv.held(c)}")
        if c.missing_figures:
            st.markdown(rv.missing_figures(c))
        if c.measured:
            st.markdown(f"**{msg('results.measured')}** {rv.text(c, 'figure')}")
            st.markdown(f"**{msg('results.why')}** {rv.why(c)}")
        for key, values in c.notes:
            st.info(msg(key, **values))
        for file, command in c.missing:
            st.warning(msg("results.missing", file=file, command=command))
            widgets.for_teachers([f"{i}. `{file}`: `{command}`"])
        st.markdown(f"**{msg('results.comparisons')}**")
        st.dataframe(rv.comparison_rows(c), hide_index=True)
        if c.outside:
            st.markdown(f"**{msg('results.outside_header')}**")
            st.dataframe(rv.outside_rows(c), hide_index=True)
        if c.files:  # where the figures come from: the teachers' expander
            widgets.for_teachers(
                [
                    f"{i}. {msg(f'results.short.{c.key}')}: "
                    + msg("results.files", files=", ".join(f"`{f}`" for f in c.files))
                ]
            )
widgets.record_time("results", _t0)

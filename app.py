"""ctxlab: the entry point (`streamlit run app.py`) and the home page: the lecture in brief, a live 苹果 demo, and the
models that are loaded.

The sidebar's page list is built here with st.navigation, so page names and browser tab titles follow the interface
language; every page keeps the URL path Streamlit gave it from its file name (/Type_vs_token, ...), so old links work."""

import time
from pathlib import Path

import streamlit as st

from ctxlib import checkpoint, registered
from ctxlib.app import gate, loaders, model_table, triple_demo, warmup, widgets
from ctxlib.app.i18n import msg, prose


def home() -> None:
    _t0 = time.perf_counter()
    widgets.page_header("ctxlab", "home.title", icon="🍎")
    st.markdown(msg("home.intro"))

    with st.expander(msg("home.lecture"), expanded=True):
        for col, part in zip(st.columns(4), ("static_limits", "elmo", "bert", "gpt")):
            col.markdown(prose(part))
        st.page_link("pages/7_Results.py", label=msg("home.results_link"), icon="📏")

    triple_demo.fragment()  # the live demo; its inputs rerun only it
    status = loaders.model_status()  # {model: load error or None}
    loaded = [m for m, err in status.items() if err is None]

    st.header(msg("home.models.header"))
    st.caption(msg("home.models.caption"))
    if registered.extra_models():
        st.caption(msg("registry.registered_caption"))
    st.dataframe(widgets.arrow_table(model_table.model_rows(status)), hide_index=True)
    for m, err in status.items():  # a broken checkpoint or registered model (one not built yet: the table says so)
        if err is not None and (loaders.is_registered(m) or checkpoint.resolve(m).exists()):
            st.caption(widgets.escape_md(msg("common.model_unavailable", model=m)) + msg("teachers.see"))
            widgets.for_teachers([widgets.escape_md(f"{m}: {err}")])  # the loader's message names the file and command
    for line in registered.problems():  # models.toml that cannot be read
        st.caption(widgets.escape_md(line))
    missing = [m for m, err in status.items() if err is not None and not loaders.is_registered(m)]
    with widgets.for_teachers(
        [msg("teachers.record")]
        + [widgets.command_line("teachers.build", checkpoint.rebuild_command(m), model=m) for m in missing]
    ):
        st.markdown(f"**{msg('teachers.training')}**")
        st.dataframe(widgets.arrow_table(model_table.training_rows(loaded)), hide_index=True)
        st.markdown(f"**{msg('teachers.full_record')}**")  # one element for all models (each element is a message)
        st.json({m: loaders.model_record(m) for m in loaded}, expanded=1)

    st.header(msg("home.pages"))
    for page in sorted(Path(__file__).parent.glob("pages/*.py")):
        st.page_link(str(page.relative_to(Path(__file__).parent)), label=widgets.page_label(page.stem))
        if (hint := widgets.page_hint(page.stem)) is not None:
            st.caption(hint)
    widgets.record_time("home", _t0)


def navigation() -> None:
    """The sidebar's page list in the session's language; the selected page runs, its tab titled "<name> · ctxlab".
    The run holds a slot of the server's page gate (ctxlib/app/gate.py: a class's runs take turns)."""
    try:
        with gate.GATE.slot():
            page = st.navigation(widgets.app_pages(home))
            st.session_state[widgets.TAB_TITLE] = "ctxlab" if page.url_path == "" else f"{page.title} · ctxlab"
            page.run()
    finally:  # after the first page is drawn: corpus, UMAP's compiled code, nearest words, the atlas (once a process)
        warmup.start()


navigation()

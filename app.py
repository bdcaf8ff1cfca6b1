"""ctxlab: the entry point (`streamlit run app.py`) and the home page: the lecture in brief, a live 苹果 demo, and the
models that are loaded.

The sidebar's page list is built here with st.navigation, so page names and browser tab titles follow the interface
language; every page keeps the URL path Streamlit gave it from its file name (/Type_vs_token, ...), so old links work."""
import time
from pathlib import Path

import streamlit as st

from ctxlib import checkpoint
from ctxlib.app import loaders, state, widgets
from ctxlib.app.i18n import msg, prose
from ctxlib.viz import explorer
from ctxlib.viz.common import PLOTLY_CONFIG


def home() -> None:
    _t0 = time.perf_counter()
    widgets.page_header("ctxlab", "home.title", icon="🍎")
    st.markdown(msg("home.intro"))

    with st.expander(msg("home.lecture"), expanded=True):
        for col, part in zip(st.columns(4), ("static_limits", "elmo", "bert", "gpt")):
            col.markdown(prose(part))
        st.page_link("pages/7_Results.py", label=msg("home.results_link"), icon="📏")

    st.header(msg("home.demo.header"))
    word = st.text_input(msg("home.demo.word"), value=state.init("home_word", "word", "苹果", max_chars=12), key="home_word_w", max_chars=12)
    a_col, b_col = st.columns(2)
    s1 = a_col.text_input(msg("home.demo.sentence_a"), value=state.init("home_a", "a", "苹果真好吃", max_chars=300), key="home_a_w", max_chars=300)
    s2 = b_col.text_input(msg("home.demo.sentence_b"), value=state.init("home_b", "b", "苹果手机很好用", max_chars=300), key="home_b_w", max_chars=300)
    st.query_params.update({"word": word, "a": s1, "b": s2})
    _, problems = widgets.demo_cosines([], word, s1, s2)  # input problems only
    for note in problems:
        st.warning(widgets.escape_md(note))
    chart, notes = st.empty(), st.container()
    rows, status = [], {}
    for m in loaders.MODEL_ORDER:  # model by model, so word2vec's bar shows while the others still load
        with st.spinner(msg("home.demo.loading", model=m)):
            status[m] = loaders.try_load(m)[1]
            new, found = widgets.demo_cosines([m], word, s1, s2) if status[m] is None and not problems else ([], [])
        for note in found:
            notes.warning(widgets.escape_md(note))
        if new:
            rows += new
            bars = [(m, widgets.layer_label(n), c) for m, n, c in rows]  # layer names in the session's language
            chart.plotly_chart(explorer.cosine_bars(bars, title=msg("home.demo.chart_title", word=word), y_title="cos"),
                               config=PLOTLY_CONFIG)
    loaded = [m for m, err in status.items() if err is None]
    if not loaded:
        st.warning(msg("home.demo.no_model", command=checkpoint.rebuild_command("word2vec")))
    if rows:
        st.caption(msg("home.demo.caption"))
        if any(r[0] == "gpt" for r in rows):
            st.caption(msg("home.demo.caption_gpt"))

    st.header(msg("home.models.header"))
    st.caption(msg("home.models.caption"))
    st.dataframe(widgets.model_rows(status), hide_index=True)
    for m, err in status.items():
        if err is not None and checkpoint.resolve(m).exists():  # a broken checkpoint; one not built yet: the table says so
            st.caption(widgets.escape_md(f"{m}: {err}"))
    with st.expander(msg("home.models.full_record")):
        for m in loaded:
            st.markdown(f"**{m}**")
            st.json(loaders.model_record(m), expanded=False)

    st.header(msg("home.pages"))
    for page in sorted(Path(__file__).parent.glob("pages/*.py")):
        st.page_link(str(page.relative_to(Path(__file__).parent)), label=widgets.page_label(page.stem))
        if (hint := widgets.page_hint(page.stem)) is not None:
            st.caption(hint)
    widgets.record_time("home", _t0)
    loaders.prewarm_corpus()  # after the page is drawn: the atlas page needs the corpus


def navigation() -> None:
    """The sidebar's page list in the session's language; the selected page runs, its tab titled "<name> · ctxlab"."""
    root = Path(__file__).parent
    pages = [st.Page(home, title=msg("pages.Home.label"), icon="🍎", default=True)]
    for f in sorted(root.glob("pages/*.py")):
        pages.append(st.Page(str(f.relative_to(root)), title=widgets.page_label(f.stem), url_path=f.stem.split("_", 1)[1]))
    page = st.navigation(pages)
    st.session_state[widgets.TAB_TITLE] = "ctxlab" if page.url_path == "" else f"{page.title} · ctxlab"
    page.run()


navigation()

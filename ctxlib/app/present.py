"""Presentation mode: large text and plots and fewer controls, for projecting in a classroom.

A sidebar toggle (drawn by widgets.page_header on every page) kept in session state and in ?present=1, so it holds
across pages and in a shared link. Text grows through CSS (Streamlit sizes its text in rem); Plotly figures grow in
one place: every st.plotly_chart call (any container) goes through a wrapper that, in this session's presentation
mode only, draws `viz.common.scale_fonts(figure, SCALE)` without the mode bar.
"""
from __future__ import annotations

import functools

import streamlit as st

from ctxlib.viz.common import scale_fonts

from .i18n import msg

KEY = "ctxlab_present"  # the session's setting; outlives pages that do not draw the toggle
WIDGET = "ctxlab_present_toggle"
PARAM = "present"
SCALE = 1.5  # plot font sizes in presentation mode
CSS = """<style>
html { font-size: 22px; }
[data-testid="stToolbar"], [data-testid="stElementToolbar"], [data-testid="stSidebar"] [data-testid="stCaptionContainer"],
[data-testid="stSidebarNav"] + div [data-testid="stTooltipIcon"] { display: none !important; }
.stMainBlockContainer { max-width: 100% !important; padding-top: 2.5rem !important; }
[data-testid="stHtml"] { zoom: 1.35; }  /* inline HTML (the pre-training example) sizes its text in px */
[data-testid="stMetricValue"] { font-size: 1.6rem !important; }
</style>"""


def is_on() -> bool:
    """Whether this session is in presentation mode (False outside a script run)."""
    try:
        return bool(st.session_state.get(KEY, False))
    except Exception:
        return False


def _changed() -> None:
    st.session_state[KEY] = bool(st.session_state.get(WIDGET))


def sidebar_toggle() -> bool:
    """The sidebar toggle; on the session's first run the link's ?present=1 turns it on. Returns the setting."""
    if KEY not in st.session_state:
        st.session_state[KEY] = st.query_params.get(PARAM, "") in ("1", "true", "on")
    st.session_state[WIDGET] = st.session_state[KEY]  # the widget is new on each page: it shows the session's setting
    st.sidebar.toggle(msg("present.toggle"), key=WIDGET, on_change=_changed, help=msg("present.help"))
    on = st.session_state[KEY]
    if on:
        st.query_params[PARAM] = "1"
        st.html(CSS)
    elif PARAM in st.query_params:
        del st.query_params[PARAM]
    _install_chart_hook()
    return on


@functools.cache
def _install_chart_hook() -> None:
    """Route DeltaGenerator.plotly_chart (st.plotly_chart, col.plotly_chart, ...) through `_present_chart`, once per
    process; sessions not in presentation mode get the original call unchanged."""
    import streamlit
    from streamlit.delta_generator import DeltaGenerator

    original = DeltaGenerator.plotly_chart

    @functools.wraps(original)
    def plotly_chart(self, figure_or_data, *args, **kwargs):
        if is_on():
            figure_or_data = scale_fonts(figure_or_data, SCALE)
            kwargs["config"] = {**(kwargs.get("config") or {}), "displayModeBar": False}
        return original(self, figure_or_data, *args, **kwargs)

    DeltaGenerator.plotly_chart = plotly_chart
    streamlit.plotly_chart = plotly_chart.__get__(streamlit._main)

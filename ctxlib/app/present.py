"""Presentation mode: large text and plots and fewer controls, for projecting in a classroom.

A sidebar toggle (drawn by widgets.page_header on every page) kept in session state and in ?present=1, so it holds
across pages and in a shared link. In the mode the sidebar starts collapsed (st.set_page_config), text grows through
CSS (Streamlit sizes its text in rem) and the page is compact; Plotly figures grow in one place: every st.plotly_chart
call (any container) goes through a wrapper that, in this session's presentation mode only, draws
`viz.common.scale_fonts(figure, SCALE, CAP)` without the mode bar, no taller than `max_chart_height` allows.

`keyboard` (the Lesson page) mounts a small st.components.v2 script: ← / → and a reveal key click the page's own
buttons (found by their key's class `st-key-<key>`), and it reports the window's height so the page can size its
charts to the screen. Streamlit itself has no key events.
"""

from __future__ import annotations

import contextlib
import functools

import streamlit as st

from ctxlib.viz.common import scale_fonts

from .i18n import msg

KEY = "ctxlab_present"  # the session's setting; outlives pages that do not draw the toggle
WIDGET = "ctxlab_present_toggle"
PARAM = "present"
SCALE = 1.75  # plot font sizes in presentation mode: Plotly's 12 px ticks become 21 px, about the page's text
CAP = 26  # ... but no font grows past this (long titles of plots in narrow columns must still fit)
LIMIT = "ctxlab_present_chart_max"  # this run's tallest chart in px (None: no limit); see max_chart_height
CSS = """<style>
html { font-size: 22px; }
[data-testid="stToolbar"], [data-testid="stElementToolbar"], [data-testid="stSidebar"] [data-testid="stCaptionContainer"],
[data-testid="stSidebarNav"] + div [data-testid="stTooltipIcon"] { display: none !important; }
/* compact: the header bar lets clicks through to the page under it; less padding, smaller page titles */
[data-testid="stHeader"] { background: transparent !important; pointer-events: none; }
[data-testid="stHeader"] button, [data-testid="stHeader"] a { pointer-events: auto; }
.stMainBlockContainer { max-width: 100% !important; padding: 1rem 3rem 1rem 4rem !important; }
.stMainBlockContainer h1 { font-size: 1.5rem !important; padding: 0 !important; }
.stMainBlockContainer h2 { font-size: 1.55rem !important; padding: 0.2rem 0 !important; }
[data-testid="stHtml"] { zoom: 1.45; }  /* inline HTML (the pre-training example) sizes its text in px */
[data-testid="stMetricValue"] { font-size: 1.6rem !important; }
[data-testid="stCode"] code { font-size: 1.1rem !important; }  /* a step's sentence: read from the back row */
.st-key-ctxlab_present_keys { display: none !important; }  /* the keys' script draws nothing */
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
    st.session_state[LIMIT] = None  # a page sets its own (max_chart_height)
    # the sidebar starts closed; a browser where the user once opened or closed it remembers that instead, so
    # keyboard() also closes it, once a page load, on a page that has keys
    st.set_page_config(initial_sidebar_state="collapsed" if on else "auto")
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
            figure_or_data = scale_fonts(figure_or_data, SCALE, CAP)
            limit, lay = st.session_state.get(LIMIT), figure_or_data["layout"]
            if limit and lay.get("height", 450) > limit:  # 450: Plotly's own height where a figure sets none
                lay["height"] = int(limit)
            kwargs["config"] = {**(kwargs.get("config") or {}), "displayModeBar": False}
        return original(self, figure_or_data, *args, **kwargs)

    DeltaGenerator.plotly_chart = plotly_chart
    streamlit.plotly_chart = plotly_chart.__get__(streamlit._main)


@contextlib.contextmanager
def max_chart_height(px: int | None):
    """Within the block, charts drawn in presentation mode are at most `px` high (None: as they come)."""
    old = st.session_state.get(LIMIT)
    st.session_state[LIMIT] = px
    try:
        yield
    finally:
        st.session_state[LIMIT] = old


# Keys: ← / PageUp (a presenter's clicker) and → / PageDown click `prev` and `next`; r or space clicks `reveal`.
# Nothing happens while the focus is in a text field, nor with Ctrl/Alt/Cmd; the listener runs in the capture phase
# and stops the event, so Streamlit's own "r" (rerun) does not also fire.
KEYS_JS = """
export default function(component) {
  const { setStateValue, data } = component;
  const click = (key) => {
    const b = key && document.querySelector(`.st-key-${key} button`);
    if (b && !b.disabled) b.click();
  };
  const onKey = (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey || e.isComposing) return;
    const t = e.target;
    if (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName))) return;
    const k = e.key;
    const key = (k === "ArrowRight" || k === "PageDown") ? data.next : (k === "ArrowLeft" || k === "PageUp") ? data.prev
      : (k === "r" || k === "R" || k === " ") ? data.reveal : null;
    if (!key) return;
    e.preventDefault();
    e.stopImmediatePropagation();
    if (document.activeElement && document.activeElement.tagName === "BUTTON") document.activeElement.blur();
    click(key);
  };
  window.addEventListener("keydown", onKey, true);
  let timer = null;
  const report = () => setStateValue("height", window.innerHeight);
  const onResize = () => { clearTimeout(timer); timer = setTimeout(report, 300); };
  window.addEventListener("resize", onResize);
  report();
  if (!window.__ctxlabSidebarClosed) {
    window.__ctxlabSidebarClosed = true;
    const open = document.querySelector('[data-testid="stSidebar"][aria-expanded="true"]');
    const close = open && open.querySelector('[data-testid="stSidebarCollapseButton"] button');
    if (close) close.click();
  }
  return () => {
    window.removeEventListener("keydown", onKey, true);
    window.removeEventListener("resize", onResize);
    clearTimeout(timer);
  };
}
"""


@functools.cache
def _keys_component():
    return st.components.v2.component("ctxlab_present_keys", js=KEYS_JS)


def keyboard(prev: str, next: str, reveal: str) -> int | None:
    """In presentation mode: the keys for the buttons with these keys, a one-line hint of them, and the window's
    height in px as the browser last reported it (None before it has, outside presentation mode, or in tests)."""
    if not is_on():
        return None
    st.caption(msg("present.keys"))
    out = _keys_component()(
        key="ctxlab_present_keys",
        data={"prev": prev, "next": next, "reveal": reveal},
        default={"height": None},
        on_height_change=lambda: None,
    )
    h = out.get("height") if isinstance(out, dict) else getattr(out, "height", None)
    return int(h) if isinstance(h, (int, float)) and h > 0 else None

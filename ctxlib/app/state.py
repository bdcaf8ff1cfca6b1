"""Widget state kept in the URL's query parameters: a copied link reopens the same view.

Each helper sets the widget's session-state value from the query parameter on the session's first run only;
after that the widget owns the value.
"""
from __future__ import annotations

import streamlit as st


def init(key: str, param: str, default):
    """Session-state value for widget `key`, taken from query parameter `param` on the session's first run."""
    if key not in st.session_state:
        st.session_state[key] = st.query_params.get(param, default) if param in st.query_params else default
    return st.session_state[key]


def choice(key: str, param: str, options: list[str]) -> str:
    """Like `init` for a radio/select: the query parameter is used only if it is one of `options`."""
    if key not in st.session_state:
        v = st.query_params.get(param)
        st.session_state[key] = v if v in options else options[0]
    return st.session_state[key]


def integer(key: str, param: str, default: int, lo: int, hi: int, options: list[int] | None = None) -> int:
    """Session-state int for widget `key`: from query parameter `param` on the first run, always clamped to
    [lo, hi] (and snapped to `options`), so a stale value (e.g. a layer of another model) never breaks the widget."""
    v = st.session_state.get(key)
    if v is None:
        raw = st.query_params.get(param, "")
        v = int(raw) if raw.lstrip("-").isdigit() else default
    v = max(lo, min(hi, int(v)))
    if options:
        v = min(options, key=lambda o: abs(o - v))
    st.session_state[key] = v
    return v


def flag(key: str, param: str) -> None:
    """on_change callback: mirror a toggle/checkbox into a query parameter ("1" or absent)."""
    if st.session_state.get(key):
        st.query_params[param] = "1"
    elif param in st.query_params:
        del st.query_params[param]


def model_list(param: str = "models") -> list[str]:
    """The comma-separated model names in `?models=`."""
    return [m for m in st.query_params.get(param, "").split(",") if m]


def layer_choices(param: str = "layers") -> dict[str, int]:
    """{model: layer} from `?layers=elmo:2,bert:4`."""
    out = {}
    for part in st.query_params.get(param, "").split(","):
        m, _, j = part.partition(":")
        if j.isdigit():
            out[m] = int(j)
    return out

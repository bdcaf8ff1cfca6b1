"""Widget state kept in the URL's query parameters: a copied link reopens the same view.

Each helper sets the widget's session-state value from the query parameter on the session's first run only;
after that the widget owns the value. A parameter that cannot be used (an unknown value, a number out of range or
not a number, a text longer than its box) falls back to the default, and a short caption says so: a bad link never
raises.
"""

from __future__ import annotations

import re

import streamlit as st

from .i18n import escape_md, msg

SHOWN = 30  # characters of a bad value quoted in a notice
_INT = re.compile(r"-?[0-9]{1,9}")  # ASCII digits only: str.isdigit() accepts '²', which int() rejects


def notice(msg_id: str, param: str, value="", **values) -> None:
    """A caption: the link's `param` could not be used (`value` quoted, shortened and shown as plain text)."""
    v = str(value)
    st.caption(escape_md(msg(msg_id, param=param, value=v if len(v) <= SHOWN else v[:SHOWN] + "…", **values)))


def init(key: str, param: str, default, max_chars: int | None = None):
    """Session-state value for widget `key`, taken from query parameter `param` on the session's first run
    (one longer than `max_chars`: `default`, with a notice)."""
    if key not in st.session_state:
        v = st.query_params.get(param, default) if param in st.query_params else default
        if max_chars is not None and len(v) > max_chars:
            notice("common.url.too_long", param, max=max_chars, default=str(default)[:SHOWN])
            v = default
        st.session_state[key] = v
    return st.session_state[key]


def choice(key: str, param: str, options: list[str], what: str | None = None, names=None) -> str:
    """Like `init` for a radio/select: the query parameter is used only if it is one of `options`; otherwise the
    first option, with a notice ('... is not <what> here; showing <names(first option)>')."""
    if key not in st.session_state:
        v = st.query_params.get(param)
        st.session_state[key] = v if v in options else options[0]
        if v is not None and v not in options:
            show = names(options[0]) if callable(names) else (names or {}).get(options[0], options[0])
            notice("common.url.bad_choice", param, v, what=what or msg("common.url.what_choice"), default=show)
    return st.session_state[key]


def integer(key: str, param: str, default: int, lo: int, hi: int, options: list[int] | None = None) -> int:
    """Session-state int for widget `key`: from query parameter `param` on the first run (a value that is not a whole
    number in [lo, hi], or not one of `options`: `default`, with a notice); always clamped to [lo, hi] (and snapped to
    `options`), so a stale value (e.g. a layer of another model) never breaks the widget."""
    v = st.session_state.get(key)
    if v is None:
        raw, v = st.query_params.get(param), default
        if raw is not None:
            n = int(raw) if _INT.fullmatch(raw.strip()) else None
            if n is not None and lo <= n <= hi and (not options or n in options):
                v = n
            elif options:
                notice("common.url.bad_option", param, raw, options=", ".join(map(str, options)), default=default)
            else:
                notice("common.url.bad_number", param, raw, lo=lo, hi=hi, default=default)
    v = max(lo, min(hi, int(v)))
    if options:
        v = min(options, key=lambda o: abs(o - v))
    st.session_state[key] = v
    return v


def layer(key: str, param: str, n: int) -> int:
    """`integer` for a layer widget over `n` layers (default: the top one). When the number of layers changes (the
    user switched model), the chosen layer moves to the same relative depth: the top layer stays the top layer. The
    last (layer, n) is also kept under `<key>_was`, which outlives runs that do not draw the widget (a one-layer model,
    a word with too few occurrences): Streamlit drops the widget's own state then."""
    from ctxlib.explore import same_depth

    if was := st.session_state.get(f"{key}_was"):
        j = st.session_state.get(key)
        j = was[0] if j is None else int(j)
        st.session_state[key] = same_depth(j, was[1], n) if was[1] != n else j
    j = integer(key, param, n - 1, 0, n - 1)
    st.session_state[f"{key}_was"] = (j, n)
    return j


def flag(key: str, param: str) -> None:
    """on_change callback: mirror a toggle/checkbox into a query parameter ("1" or absent)."""
    if st.session_state.get(key):
        st.query_params[param] = "1"
    elif param in st.query_params:
        del st.query_params[param]


def model_list(param: str = "models") -> list[str]:
    """The comma-separated model names in `?models=` (this session's live models included; names of no model of this
    app, or another session's live models: left out, with a notice)."""
    from .loaders import LIVE_PREFIX, live_models, model_order

    known = [*model_order(), *live_models()]
    names = [m for m in st.query_params.get(param, "").split(",") if m]
    bad = [m for m in names if m not in known]
    if elsewhere := [m for m in bad if m.startswith(LIVE_PREFIX)]:
        notice("live.url.elsewhere", param, ",".join(elsewhere))
    if other := [m for m in bad if not m.startswith(LIVE_PREFIX)]:
        notice("common.url.bad_models", param, ",".join(other))
    return [m for m in names if m in known]


def layer_choices(param: str = "layers") -> dict[str, int]:
    """{model: layer} from `?layers=elmo:2,bert:4` (parts that are not model:number: left out, with a notice)."""
    from .loaders import model_order

    order = model_order()

    out, bad = {}, []
    for part in (p for p in st.query_params.get(param, "").split(",") if p):
        m, _, j = part.partition(":")
        if m in order and _INT.fullmatch(j) and not j.startswith("-"):
            out[m] = int(j)
        else:
            bad.append(part)
    if bad:
        notice("common.url.bad_layers", param, ",".join(bad))
    return out

"""Streamlit glue: the only module in ctxlib that imports streamlit.

- `t(zh, en)`: interface text in the chosen language (中文 / English); strings
  live next to where they are used, so pages stay self-contained.
- `language_switch()`: sidebar selector, defaulting to the browser's locale.
- cached loaders keyed by strings (`load_encoder(name)`), and `model_status()`.
- `show_error(...)`: a clear message instead of a traceback.
"""
from __future__ import annotations

import streamlit as st

import ctxlib
from ctxlib import checkpoint

LANG_KEY = "ctxlab_lang"
MODEL_ORDER = ("word2vec", "elmo", "bert")


def _default_lang() -> str:
    qp = st.query_params.get("lang")
    if qp in ("zh", "en"):
        return qp
    loc = None
    try:
        loc = st.context.locale  # browser locale, e.g. "zh-CN" (Streamlit >= 1.4x)
    except Exception:
        loc = None
    return "zh" if (loc or "").lower().startswith("zh") else "en"


def lang() -> str:
    if LANG_KEY not in st.session_state:
        st.session_state[LANG_KEY] = _default_lang()
    return st.session_state[LANG_KEY]


def t(zh: str, en: str) -> str:
    """The interface string in the current language."""
    return zh if lang() == "zh" else en


def language_switch() -> None:
    cur = lang()
    choice = st.sidebar.radio("语言 / Language", ["中文", "English"], index=0 if cur == "zh" else 1,
                              horizontal=True, key="ctxlab_lang_radio")
    new = "zh" if choice == "中文" else "en"
    if new != cur:
        st.session_state[LANG_KEY] = new
        st.rerun()


@st.cache_resource(show_spinner=False)
def load_encoder(name: str):
    """A loaded Encoder, cached across reruns and sessions."""
    return ctxlib.load(name)


def try_load(name: str):
    """(encoder, None) or (None, message naming the rebuild command)."""
    try:
        return load_encoder(name), None
    except checkpoint.CheckpointError as e:
        return None, str(e)
    except Exception as e:  # a broken checkpoint must not take the page down
        return None, f"{name}: {type(e).__name__}: {e}. Rebuild with: {checkpoint.rebuild_command(name)}"


def model_status() -> dict[str, str | None]:
    """{model name: None if loadable else the message to show}, for the three standard models."""
    out = {}
    for name in MODEL_ORDER:
        _, err = try_load(name)
        out[name] = err
    return out


def show_error(message: str) -> None:
    """A user-facing error (markdown-escaped so user text never renders as HTML/markdown)."""
    st.error(escape_md(message))


def escape_md(text: str) -> str:
    """Escape markdown/HTML specials in user text for st.markdown/st.error."""
    out = []
    for ch in str(text):
        if ch in "\\`*_{}[]()#+-.!|<>$~":
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)

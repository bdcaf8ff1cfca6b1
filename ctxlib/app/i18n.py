"""Interface language and the string catalogue.

Strings live in files a translator can edit, one folder per language:

- `strings/<lang>/<area>.toml`: short messages. The id of `key` in table `[demo]` of `home.toml` is
  `home.demo.key`. Placeholders are `{name}`, filled by `msg(id, name=...)`; write `{{`/`}}` for a brace.
- `strings/<lang>/lecture/<name>.md`: the lecture's long prose, read by `prose(name)`.

Every language has the same ids and placeholders (tests/test_strings.py checks this, and that every id the
code names exists). A missing id falls back to English, then to the id itself: a page never crashes on text.
To add a language, copy `strings/en/` to `strings/<code>/`, translate, and add the code to `LANGS`.
"""

from __future__ import annotations

import functools
import tomllib
from pathlib import Path

import streamlit as st

STRINGS_DIR = Path(__file__).resolve().parent / "strings"
LANGS = {"zh": "中文", "en": "English"}  # code -> the language's own name, in the switch's order
FALLBACK = "en"
_STATE_KEY = "ctxlab_lang"
_BAD_LANG_KEY = "ctxlab_bad_lang"  # a ?lang= that is no language of the app


@functools.cache
def catalogue(code: str) -> dict[str, str]:
    """{message id: text} of one language, from strings/<code>/*.toml."""
    out: dict[str, str] = {}
    for f in sorted((STRINGS_DIR / code).glob("*.toml")):
        with f.open("rb") as fh:
            _flatten(f.stem, tomllib.load(fh), out)
    return out


def _flatten(prefix: str, table: dict, out: dict[str, str]) -> None:
    for k, v in table.items():
        if isinstance(v, dict):
            _flatten(f"{prefix}.{k}", v, out)
        else:
            out[f"{prefix}.{k}"] = str(v)


def escape_md(text: str) -> str:
    """User text made literal for st.markdown/st.caption/st.error (Markdown and HTML specials escaped)."""
    return "".join("\\" + ch if ch in "\\`*_{}[]()#+-.!|<>$~" else ch for ch in str(text))


def lookup(msg_id: str, code: str, /, **values) -> str:
    """The text of `msg_id` in language `code` (English, then the id itself, when missing), placeholders filled."""
    text = catalogue(code).get(msg_id)
    if text is None:
        text = catalogue(FALLBACK).get(msg_id, msg_id)
    return text.format(**values) if values else text


@functools.cache
def _prose(code: str, name: str) -> str:
    for c in (code, FALLBACK):
        f = STRINGS_DIR / c / "lecture" / f"{name}.md"
        if f.is_file():
            return f.read_text(encoding="utf-8").strip()
    return name


def _default_lang() -> str:
    qp = st.query_params.get("lang")
    if qp in LANGS:
        return qp
    if qp is not None:  # told on the page by widgets.page_header, once the page has its header
        st.session_state[_BAD_LANG_KEY] = qp
    try:
        loc = st.context.locale  # browser locale, e.g. "zh-CN"
    except Exception:
        loc = None
    return "zh" if (loc or "").lower().startswith("zh") else "en"


def lang() -> str:
    """The session's interface language code."""
    code = st.session_state.get(_STATE_KEY)  # one look-up: a page run asks ~150 times
    if code is None:
        code = st.session_state[_STATE_KEY] = _default_lang()
    return code


def msg(msg_id: str, /, **values) -> str:
    """Interface text `msg_id` in the session's language."""
    return lookup(msg_id, lang(), **values)


def prose(name: str) -> str:
    """The lecture text strings/<lang>/lecture/<name>.md (Markdown)."""
    return _prose(lang(), name)


def language_switch() -> None:
    """Sidebar selector; the choice is kept in ?lang= so shared links keep it."""
    cur = lang()
    codes = list(LANGS)
    choice = st.sidebar.radio(
        "语言 / Language", [LANGS[c] for c in codes], index=codes.index(cur), horizontal=True, key="ctxlab_lang_radio"
    )
    new = codes[[LANGS[c] for c in codes].index(choice)]
    if new != cur:
        st.session_state[_STATE_KEY] = new
        st.rerun()
    st.query_params["lang"] = lang()


def bad_lang_param() -> str | None:
    """The link's ?lang= value when it named no language of the app (once per session; widgets.page_header
    tells the user)."""
    return st.session_state.pop(_BAD_LANG_KEY, None)

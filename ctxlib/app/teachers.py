"""One "for teachers" expander per page: the build and eval commands, checkpoint paths and file names that a student
does not need to read, kept out of the page's own text.

`start_page` (called by widgets.page_header) leaves an empty slot under the page's title; the first `for_teachers`
call of a script run puts the expander there, and later calls add their lines to the same expander, so a page has one
whichever of its parts (page, view, sidebar picker) brings a command. Text written for this project."""

from __future__ import annotations

import streamlit as st

from .i18n import msg

_KEY = "ctxlab_for_teachers"  # session key: this run's {"slot", "box", "lines"}


def start_page() -> None:
    """The slot for this run's expander (at the caller's place: under the title)."""
    st.session_state[_KEY] = {"slot": st.empty(), "box": None, "lines": []}


def for_teachers(lines=()):
    """Add `lines` (markdown; commands in backticks) to the page's one "for teachers" expander, made on first use;
    a line already there is not repeated. Returns the expander, to write more into (a table, a JSON record)."""
    page = st.session_state.get(_KEY)
    if not isinstance(page, dict):  # a page drawn without page_header: the expander goes here
        page = {"slot": st.empty(), "box": None, "lines": []}
        st.session_state[_KEY] = page
    if page["box"] is None:
        page["box"] = page["slot"].expander(msg("teachers.title"))
    for line in lines:
        if line and line not in page["lines"]:
            page["lines"].append(line)
            page["box"].markdown(line)
    return page["box"]


def command_line(what_id: str, command: str, **values) -> str:
    """'<what>: `command`' for the expander (e.g. teachers.build: `python -m ctxlib train bert`)."""
    return f"{msg(what_id, **values)}`{command}`"


def eval_line(model: str, task: str) -> str:
    """The expander's line for the command that writes a model's eval file of `task`."""
    return command_line("teachers.eval", f"python -m ctxlib eval {model} --task {task}", model=model, task=task)

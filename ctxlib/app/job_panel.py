"""The Streamlit side of a background job (ctxlib.jobs): a Start button, the "someone else is running one" notes, a
fragment that polls the session's job (progress bar, a live view, Cancel), and the job's outcome kept in the session.

Session keys, for a `prefix`: <prefix>_owner (this session's id), <prefix>_job (the id of its running job),
<prefix>_result (the last finished job's result), <prefix>_note (what to tell after a cancel, failure or refusal).
Texts are catalogue ids under `ids` (start, cancel, cancelling, busy, busy_now, running, cancelled, failed, lost) and
`phase_ids` (one per phase the work reports).
"""
from __future__ import annotations

import uuid
from typing import Any, Callable

import streamlit as st

from ctxlib import jobs

from .i18n import escape_md, msg


def job_panel(slot: str, prefix: str, work: Callable[[jobs.Job], Any], *, ids: str, phase_ids: str,
              live_view: Callable[[jobs.Job], None] | None = None, poll_s: float = 2.0) -> Any:
    """Draw the controls of the server-wide job `slot`; returns this session's last result (or None).

    `work(job)` runs in the job's thread when Start is clicked (refused with a note while any session's job holds
    the slot); `live_view(job)` draws the running job's partial results on every poll."""
    owner = st.session_state.setdefault(f"{prefix}_owner", uuid.uuid4().hex)
    k_job, k_res, k_note = f"{prefix}_job", f"{prefix}_result", f"{prefix}_note"

    def start():  # a callback: runs before the page is drawn, so the button is drawn disabled at once
        st.session_state.pop(k_note, None)
        try:
            job = jobs.start(slot, work, owner=owner)
        except jobs.Busy as b:
            st.session_state[k_note] = ("warning", msg(f"{ids}.busy", pct=round(100 * b.job.progress), eta=round(b.job.eta_s())))
            return
        st.session_state[k_job] = job.id
        st.session_state.pop(k_res, None)

    mine = jobs.get(slot, st.session_state.get(k_job, -1))
    other = jobs.current(slot)
    if other is not None and other.running and other.owner != owner:
        st.info(msg(f"{ids}.busy_now", pct=round(100 * other.progress), eta=round(other.eta_s())))
    st.button(msg(f"{ids}.start"), key=f"{prefix}_start", type="primary", disabled=mine is not None and mine.running,
              on_click=start)

    @st.fragment(run_every=poll_s)
    def poll():
        job = jobs.get(slot, st.session_state.get(k_job, -1))
        if job is not None and job.running:
            st.progress(job.progress, text=msg(f"{ids}.running", phase=msg(f"{phase_ids}.{job.phase or 'data'}"),
                                               pct=round(100 * job.progress), eta=round(job.eta_s())))
            if live_view is not None:
                live_view(job)
            if st.button(msg(f"{ids}.cancel"), key=f"{prefix}_cancel") or job.cancel_requested:
                job.cancel()
                st.caption(msg(f"{ids}.cancelling"))
            return
        st.session_state.pop(k_job, None)
        if job is None:  # the server restarted, or the slot has a newer job
            st.session_state[k_note] = ("warning", msg(f"{ids}.lost"))
        elif job.state == jobs.DONE:
            st.session_state[k_res] = job.result
        elif job.state == jobs.CANCELLED:
            st.session_state[k_note] = ("info", msg(f"{ids}.cancelled", steps=len(job.points)))
        else:
            st.session_state[k_note] = ("error", msg(f"{ids}.failed", error=escape_md(job.error)))
        st.rerun()

    if k_job in st.session_state:
        poll()
    if note := st.session_state.get(k_note):
        getattr(st, note[0])(note[1])
    return st.session_state.get(k_res)

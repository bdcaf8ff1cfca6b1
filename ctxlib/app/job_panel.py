"""The Streamlit side of a queued job (ctxlib.jobs): a Start button, how busy the server's line is, a fragment that
polls the session's job (its place in line while it waits; progress, a live view and Cancel while it runs), and the
job's outcome kept in the session (the result, or what was done before a cancel).

Session keys, for a `prefix`: <prefix>_owner (this session's id), <prefix>_job (the id of its queued or running job),
<prefix>_result (the last finished job's result), <prefix>_note (what to tell after a cancel, failure or loss),
<prefix>_partial (the cancelled job, for `partial_view`). Every poll calls `job.touch()`: a session that stops
polling (its page closed) loses its job to the queue's reaper (ctxlib.jobs.STALE_S).
Texts are catalogue ids: the queue's own under `jobs.` (strings/*/jobs.toml), the page's under `ids` (start, cancel,
cancelling, running, cancelled, failed, lost) and `phase_ids` (one per phase the work reports).
"""

from __future__ import annotations

import functools
import uuid
from typing import Any, Callable

import streamlit as st

from ctxlib import jobs

from .i18n import escape_md, msg


def _show_queued(job: jobs.Job, place: int, prefix: str):
    """A job waiting in line at `place`: the place, the wait, and a button to leave the line."""
    job.touch()
    st.info(msg("jobs.queued", place=place, n=len(jobs.line()[1]), wait=round(job.wait_s())))
    if st.button(msg("jobs.leave"), key=f"{prefix}_leave"):
        job.cancel()
        st.rerun()


def _show_running(job: jobs.Job, prefix: str, ids: str, phase_ids: str, live_view: Callable[[jobs.Job], None] | None):
    """A running job: progress with its phase and ETA, the live view, and Cancel."""
    job.touch()
    st.progress(
        job.progress,
        text=msg(
            f"{ids}.running",
            phase=msg(f"{phase_ids}.{job.phase or 'data'}"),
            pct=round(100 * job.progress),
            eta=round(job.eta_s()),
        ),
    )
    if live_view is not None:
        live_view(job)
    if st.button(msg(f"{ids}.cancel"), key=f"{prefix}_cancel") or job.cancel_requested:
        job.cancel()
        st.caption(msg(f"{ids}.cancelling"))


def _keep_outcome(job: jobs.Job | None, prefix: str, ids: str):
    """Put a finished (or lost) job's outcome in the session: its result, or a note and what a cancel kept."""
    k_res, k_note, k_part = f"{prefix}_result", f"{prefix}_note", f"{prefix}_partial"
    st.session_state.pop(f"{prefix}_job", None)
    if job is None:  # the server restarted, or the job was forgotten
        st.session_state[k_note] = ("warning", msg(f"{ids}.lost"))
    elif job.state == jobs.DONE:
        st.session_state[k_res] = job.result
    elif job.state == jobs.CANCELLED:
        if job.cancel_reason == "owner left":
            st.session_state[k_note] = ("warning", msg("jobs.reaped"))
        elif job.started is None:
            st.session_state[k_note] = ("info", msg("jobs.left_line"))
        else:
            st.session_state[k_note] = ("info", msg(f"{ids}.cancelled", steps=len(job.points)))
        if job.points or job.partial is not None:
            st.session_state[k_part] = job
    else:
        st.session_state[k_note] = ("error", msg(f"{ids}.failed", error=escape_md(job.error)))


def job_panel(
    kind: str,
    prefix: str,
    work: Callable[[jobs.Job], Any],
    *,
    ids: str,
    phase_ids: str,
    live_view: Callable[[jobs.Job], None] | None = None,
    partial_view: Callable[[jobs.Job], None] | None = None,
    poll_s: float = 2.0,
    expected_s: float | None = None,
    args: Callable[[], dict] | None = None,
) -> Any:
    """Draw the controls of this session's job of `kind`; returns this session's last result (or None).

    `work(job)` goes into the server's job line when Start is clicked; `live_view(job)` draws the running job's
    partial results on every poll; `partial_view(job)` draws what a cancelled job had done. With `args`, the job
    runs `work(job, **args())`, args() being called when Start is clicked: read widget values from st.session_state
    there, since a click in the same rerun as a widget change would otherwise start the previous run's values."""
    owner = st.session_state.setdefault(f"{prefix}_owner", uuid.uuid4().hex)
    k_job, k_res, k_note, k_part = f"{prefix}_job", f"{prefix}_result", f"{prefix}_note", f"{prefix}_partial"

    def start():  # a callback: runs before the page is drawn, so the button is drawn disabled at once
        for k in (k_note, k_part, k_res):
            st.session_state.pop(k, None)
        run = work if args is None else functools.partial(work, **args())
        st.session_state[k_job] = jobs.start(kind, run, owner=owner, expected_s=expected_s).id

    mine = jobs.get(kind, st.session_state.get(k_job, -1))
    active = mine is not None and not mine.finished
    if active:
        mine.touch()
    else:
        running, waiting = jobs.line()
        if running or waiting:
            st.info(
                msg("jobs.line_now", running=len(running), waiting=len(waiting), wait=round(jobs.wait_if_started_now()))
            )
    st.button(msg(f"{ids}.start"), key=f"{prefix}_start", type="primary", disabled=active, on_click=start)

    @st.fragment(run_every=poll_s)
    def poll():
        job = jobs.get(kind, st.session_state.get(k_job, -1))
        place = None if job is None else job.place()
        if place:  # waiting in line
            _show_queued(job, place, prefix)
        elif place == 0:  # running
            _show_running(job, prefix, ids, phase_ids, live_view)
        else:
            _keep_outcome(job, prefix, ids)
            st.rerun()

    if k_job in st.session_state:
        poll()
    if note := st.session_state.get(k_note):
        getattr(st, note[0])(note[1])
    if partial_view is not None and (done := st.session_state.get(k_part)) is not None:
        partial_view(done)
    return st.session_state.get(k_res)

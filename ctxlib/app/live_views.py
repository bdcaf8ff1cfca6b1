"""The training page's "Train live" part (Streamlit): the choices, the job, the running view and the finished run.

The numbers and the training come from ctxlib.live; the job goes through `start_job_panel`, the one place here that
knows the jobs API (ctxlib.app.job_panel). A run's folder lives in the session's temporary folder (live_files.LiveSession,
deleted with the session); "Use this model" adds it to loaders' session models, so the other pages' pickers offer it.
"""

from __future__ import annotations

import streamlit as st

from ctxlib import kinds, live, live_files, live_results, replay
from ctxlib.viz import training as vt
from ctxlib.viz.common import PLOTLY_CONFIG
from ctxlib.viz.live import live_loss_figure

from . import loaders, widgets
from .i18n import escape_md, msg

SLOT = "train"  # the jobs kind: live trainings wait in the server's line (ctxlib.jobs)
PREFIX = "lv"
UPLOAD_KEY = "lv_upload"
DEFAULT_BUDGET_S = 90  # the tiny BERT's first heads need ~2,000 steps, ~90 s of a free core (live.PRESETS)
MAX_UPLOAD_MB = 20  # the browser refuses larger files; live.check_upload refuses over user_text.USER_FILE_CAP


def session() -> live_files.LiveSession:
    """This session's folder for runs and uploads (made on first use; deleted with the session state)."""
    if not isinstance(st.session_state.get("lv_session"), live_files.LiveSession):
        st.session_state["lv_session"] = live_files.LiveSession()
    return st.session_state["lv_session"]


def _upload(kind: str):
    """(path of the checked upload, None) or (None, the message to show); (None, None) while nothing is uploaded."""
    widgets.uploader_style()  # the label says what to upload and the limit
    up = st.file_uploader(
        msg("live.upload", mb=MAX_UPLOAD_MB),
        type=["txt"],
        key=UPLOAD_KEY,
        max_upload_size=MAX_UPLOAD_MB,
        help=msg("live.upload_help"),
    )
    if up is None:
        return None, None
    data = up.getvalue()
    key = f"{up.name}|{len(data)}"
    done = st.session_state.get("lv_upload_done")
    if done and done[0] == key:
        return done[1], done[2]
    try:
        path, err = live.save_upload(data, session().upload_dir(), name=up.name), None
        enc = live.check_upload(data, up.name)
        st.caption(
            msg(
                "live.upload_ok",
                name=escape_md(up.name),
                kb=f"{len(data) / 1024:,.0f}",
                encoding="GB18030" if enc == "gb18030" else "UTF-8",
            )
        )
    except live.UploadError as e:
        path, err = None, msg(f"live.upload_error.{e.code}", name=escape_md(up.name), mb=MAX_UPLOAD_MB)
    st.session_state["lv_upload_done"] = (key, path, err)
    return path, err


def choices() -> live.LiveSpec | None:
    """The model, text and budget pickers; the spec to train, or None (with a message) when it cannot start."""
    c1, c2, c3 = st.columns([2, 2, 2])
    # the labels are fixed when drawn (not looked up later in whatever language is current): see
    # widgets.keep_choices_across_languages
    live_kinds = kinds.names(live=True)
    kind = c1.radio(
        msg("live.model"),
        live_kinds,
        key="lv_kind",
        format_func={k: msg(f"live.kind.{k}") for k in live_kinds}.__getitem__,
    )
    sources = ["builtin", "upload"] if kind in kinds.names(uploadable=True) else ["builtin"]
    if st.session_state.get("lv_source") not in sources:
        st.session_state["lv_source"] = "builtin"
    source = c2.radio(
        msg("live.source"),
        sources,
        key="lv_source",
        format_func={s: msg(f"live.source_{s}") for s in sources}.__getitem__,
    )
    if kind not in kinds.names(uploadable=True):
        c2.caption(msg("live.gpt_builtin"))
    budget = c3.slider(
        msg("live.budget"),
        live.BUDGET_MIN_S,
        live.BUDGET_MAX_S,
        DEFAULT_BUDGET_S,
        step=10,
        key="lv_budget",
        help=msg("live.budget_help"),
    )
    words, path = live.SUBSETS[1], None
    if source == "builtin":
        words = st.select_slider(
            msg("live.words"), live.SUBSETS, value=live.SUBSETS[1], key="lv_words", format_func=lambda n: f"{n:,}"
        )
    else:
        path, err = _upload(kind)
        if err:
            st.error(err)
            return None
        if path is None:
            st.info(msg("live.upload_first"))
            return None
    return live.LiveSpec(kind, float(budget), int(words), path)


def _live_view(job) -> None:
    """What the running job has reported: tokens/s, step, loss and the loss curve."""
    pts = job.points
    if not pts:
        st.caption(msg("live.loading"))
        return
    last = pts[-1]
    c = st.columns(4)
    c[0].metric(msg("live.metric.seconds"), f"{last['s']:.0f}")
    c[1].metric(msg("live.metric.step"), f"{last['step']:,}")
    c[2].metric(msg("live.metric.tokens_s"), f"{last['tokens_s']:,.0f}")
    c[3].metric(msg("live.metric.loss"), "—" if last["loss"] is None else f"{last['loss']:.3f}")
    st.plotly_chart(live_loss_figure(pts, _labels()), config=PLOTLY_CONFIG, key="lv_loss_live")
    run = session().latest()
    if run is not None and run.spec.kind in ("bert", "gpt"):  # the heads as the timeline has them so far
        try:
            rp = replay.load(run.out) if run.has_timeline() else None
        except ValueError:  # a save in progress (the two files disagree for a moment)
            rp = None
        if rp is None or len(rp.steps) < 2:
            st.caption(msg("live.heads.waiting"))
        else:
            heads_view(rp, key="lv_heads_live", running=True)


def heads_view(rp: replay.Replay, key: str = "lv_heads", running: bool = False) -> None:
    """The attention heads that form first (live_results.head_formation): the strongest previous- (and next-) character head's
    share over the snapshots, the numbers at the start and the end, and what to notice (`running`: the run goes on, so
    a head not formed yet is "so far"). Nothing for ELMo."""
    hf = live_results.head_formation(rp)
    if hf is None:
        return
    names = {m: msg(f"live.heads.{m}", layer=d["layer"], head=d["head"]) for m, d in hf.items()}
    labels = {
        "title": msg("live.heads.title"),
        "step": msg("training.axis.step"),
        "now": "",
        "share": msg("training.attention.share_axis"),
    }
    fig = vt.shares_figure(rp.steps, {m: d["shares"] for m, d in hf.items()}, rp.steps[-1], names, labels)
    st.plotly_chart(fig, config=PLOTLY_CONFIG, key=key)
    p, n = hf["prev"], hf.get("next")
    nums = dict(
        pl=p["layer"], ph=p["head"], p0=f"{p['shares'][0]:.2f}", p1=f"{p['shares'][-1]:.2f}", step=f"{rp.steps[-1]:,}"
    )
    if n is None:
        st.caption(msg("live.heads.summary_gpt", **nums))
    else:
        st.caption(
            msg(
                "live.heads.summary",
                **nums,
                nl=n["layer"],
                nh=n["head"],
                n0=f"{n['shares'][0]:.2f}",
                n1=f"{n['shares'][-1]:.2f}",
            )
        )
    # what this run shows (formed, formed then faded, not formed yet), then why these heads come first
    v = live_results.head_verdict(hf)
    first = "" if v["first"] is None else f"{rp.steps[v['first']]:,}"
    state = "forming_so_far" if running and v["state"] == "forming" else v["state"]
    st.info(
        msg(
            f"live.heads.notice_{state}",
            start=f"{v['start']:.2f}",
            end=f"{v['end']:.2f}",
            peak=f"{v['peak']:.2f}",
            first=first,
            steps=f"{rp.steps[-1]:,}",
            layer=v["layer"],
            head=v["head"],
            formed=f"{live_results.FORMED_SHARE:.1f}",
            neighbour=msg(f"live.heads.neighbour_{v['which']}"),
        )
        + msg("live.heads.why_gpt" if n is None else "live.heads.why")
    )  # en: the why starts with a space


def finished_heads(folder: str) -> None:
    """`heads_view` of a finished run's timeline (read through the replay's cache); nothing if it cannot be read (the
    replay below says why)."""
    from . import replay_views

    try:
        rp = replay_views.load(folder, replay.stamp(folder))
    except ValueError:
        return
    heads_view(rp)


def _labels() -> dict[str, str]:
    return {"title": msg("live.plot.title"), "seconds": msg("live.plot.seconds"), "loss": msg("live.plot.loss")}


def start_job_panel(spec: live.LiveSpec | None):
    """The Start/Cancel controls of the job (the only code here that knows the jobs API); the finished run or None.
    While other sessions' jobs run, a started run waits in the server's line (its place and wait shown)."""
    from .job_panel import job_panel

    sess = session()
    if spec is None:
        st.button(msg("live.job.start"), key=f"{PREFIX}_start", type="primary", disabled=True)
        return None
    return job_panel(
        SLOT,
        PREFIX,
        live.make_work(sess, spec),
        ids="live.job",
        phase_ids="live.phase",
        live_view=_live_view,
        poll_s=2.0,
    )


def finished_run() -> live.LiveRun | None:
    """The session's latest run that left a loadable checkpoint (finished, or cancelled after a save)."""
    sess = st.session_state.get("lv_session")
    run = sess.latest() if isinstance(sess, live_files.LiveSession) else None
    if run is None or run.state not in ("done", "cancelled") or not run.loadable():
        return None
    return run


def outcome(run: live.LiveRun) -> None:
    """The run's figures, "Use this model" and "Download"."""
    s = run.summary
    if run.state == "cancelled":
        st.info(msg("live.cancelled_kept_word2vec" if run.spec.kind == "word2vec" else "live.cancelled_kept"))
    else:
        st.success(
            msg(
                "live.done",
                kind=msg(f"live.kind.{run.spec.kind}"),
                steps=f"{int(s.get('steps') or 0):,}",
                tokens=f"{int(s.get('tokens_seen') or 0):,}",
                seconds=f"{(run.ended or run.started) - run.started:.0f}",
                first=f"{run.first_step_s or 0:.0f}",
            )
        )
    if run.spec.kind == "word2vec":
        rows = [
            {msg("live.col.word"): w, msg("live.col.nearest"): " · ".join(f"{x} {v:.2f}" for x, v in near)}
            for w, near in _nearest(str(run.out)).items()
        ]
        if rows:
            st.caption(msg("live.nearest_caption"))
            st.dataframe(rows, hide_index=True)
    name = f"{loaders.LIVE_PREFIX}{run.label}"
    c1, c2 = st.columns(2)

    def use():  # a callback: the button is drawn disabled in the same run
        st.session_state[loaders.LIVE_KEY] = {**loaders.live_models(), name: str(run.out)}

    used = name in loaders.live_models()
    c1.button(msg("live.use"), key="lv_use", disabled=used, help=msg("live.use_help"), on_click=use)
    if used:
        c1.caption(msg("live.used", name=escape_md(name)))
    c2.download_button(
        msg("live.download"),
        _zip(str(run.out), run.id),
        file_name=f"ctxlab-{run.label}.zip",
        mime="application/zip",
        key="lv_download",
        help=msg("live.download_help"),
    )


@st.cache_data(show_spinner=False, max_entries=4)
def _nearest(folder: str) -> dict:
    return live_results.nearest_words(folder)


@st.cache_data(show_spinner=False, max_entries=2)
def _zip(folder: str, run_id: int) -> bytes:
    return live_files.zip_bytes(folder)

"""The live fine-tuning job's Streamlit side, shared by the fine-tuning page and the lesson's fine-tuning step: one
job kind and one session prefix (ctxlib.app.job_panel), so a run started in either place is the same run in both;
its curve while it runs, and its result beside the frozen-feature probes on the same reviews once it is done.

The work is ctxlib.evaluation.finetune_live.run on the shipped BERT (ELMo and word2vec for the probes when loaded).
"""

from __future__ import annotations

import streamlit as st

from ctxlib.evaluation import finetune_live as fl
from ctxlib.viz import transfer_runs
from ctxlib.viz.common import PLOTLY_CONFIG

from . import loaders
from .i18n import msg
from .job_panel import job_panel

KIND, PREFIX = "finetune", "ft"  # the job line's kind; the session keys ft_job, ft_result, ... (job_panel)
CURVE = ("loss", "acc", "mean", "step")


def _labels(area: str, keys) -> dict[str, str]:
    return {k: msg(f"finetune.{area}.{k}") for k in keys}


def settings_caption() -> None:
    """What the live run does: its sizes and its recipe."""
    st.caption(
        msg(
            "finetune.live.settings",
            n_train=fl.N_TRAIN,
            n_test=fl.N_TEST,
            max_chars=fl.MAX_CHARS,
            epochs=1,
            batch=fl.BATCH,
            lr=fl.LR,
        )
    )


def live_plot(job) -> None:
    """The running (or cancelled) job's loss and batch accuracy per step."""
    if points := list(job.points):
        fig = loaders.cached_figure(
            f"ft_live|{job.id}|{len(points)}",
            lambda: transfer_runs.history_figure(points, points[-1]["total"], _labels("plot", CURVE)),
        )
        st.plotly_chart(fig, config=PLOTLY_CONFIG, key="ft_live")


def panel(bert) -> dict | None:
    """Start / queue / progress / Cancel for this session's fine-tuning job of `bert`; returns its last result."""
    elmo, w2v = loaders.try_load("elmo")[0], loaders.try_load("word2vec")[0]
    return job_panel(
        KIND,
        PREFIX,
        lambda j: fl.run(j, bert, elmo, w2v, n_train=fl.N_TRAIN, n_test=fl.N_TEST),
        ids="finetune.live",
        phase_ids="finetune.phase",
        live_view=live_plot,
        partial_view=live_plot,
    )


def result() -> dict | None:
    """This session's last finished run's result (from either place), or None."""
    return st.session_state.get(f"{PREFIX}_result")


def result_view(res: dict, key: str = "ft", note=st.success) -> None:
    """A finished run: its times and test accuracy (in a `note` box), its curve, and the fine-tuned model beside the
    frozen probes on the same held-out reviews (chart keys <key>_history, <key>_compare)."""
    note(
        msg(
            "finetune.live.done",
            seconds=res["seconds"],
            ft_seconds=res["finetune_seconds"],
            acc=res["accuracy"],
            cpu_seconds=res["cpu_seconds"],
            n_test=res["n_test"],
        )
    )
    st.plotly_chart(
        transfer_runs.history_figure(res["history"], len(res["history"]), _labels("plot", CURVE)),
        config=PLOTLY_CONFIG,
        key=f"{key}_history",
    )
    base = res["baselines"]
    rows = [(msg("finetune.plot.finetuned"), res["accuracy"])]
    rows += [(msg(f"finetune.plot.{k}"), base[k]) for k in ("bert_cls", "elmo", "word2vec")]
    labels = {
        **_labels("plot", ("accuracy", "majority", "missing")),
        "title": msg("finetune.plot.title", n=res["n_test"]),
    }
    st.plotly_chart(
        transfer_runs.comparison_figure(rows, res["majority"], labels), config=PLOTLY_CONFIG, key=f"{key}_compare"
    )
    st.caption(msg("finetune.plot.caption", n_train=res["n_train"], n_test=res["n_test"]))

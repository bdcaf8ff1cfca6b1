"""Sections of the ELMo layers page (pages/3_ELMo_layers.py) below the language models: the task-specific layer
weights read from the eval records, live mix training, and how each task uses the layers (Peters et al. 2018)."""

import streamlit as st

from ctxlib import records
from ctxlib.app import elmo_views, widgets
from ctxlib.app.i18n import msg
from ctxlib.app.job_panel import job_panel
from ctxlib.evaluation import tasks
from ctxlib.viz import elmo as ve


def weights_section(enc, task_names: dict) -> tuple[dict, list[str]]:
    """The learned mixing weights and probe scores of each evaluated task; (the evals, the short layer names)."""
    st.subheader(msg("elmo.head.weights"))
    evals, missing = records.read_evals(enc.path, task_names)
    short = [msg("elmo.weights.token"), *(msg("labels.layer.bilstm", n=j) for j in (1, 2))]
    for task in missing:
        st.info(msg("elmo.weights.no_eval", task=task_names[task], task_id=task))
        widgets.for_teachers([widgets.eval_line("elmo", task)])
    if evals:
        st.plotly_chart(ve.mix_weights_figure(evals, short, task_names, msg("labels.axis.uniform")), width="stretch")
        for col, (task, ev) in zip(st.columns(len(evals)), evals.items()):
            names = {
                "mix": msg("elmo.weights.mix"),
                "title": task_names[task],
                ev.metric: msg(f"labels.metric.{ev.metric}"),
            }
            col.plotly_chart(ve.probe_scores_figure(ev, short, names), width="stretch", key=f"probe_{task}")
        st.caption(msg("elmo.weights.caption"))
    return evals, short


def live_section(enc, short: list[str], task_names: dict) -> None:
    """Train the scalar mix of one task for a few seconds, watching the weights move; then its history and score."""
    st.subheader(msg("elmo.head.live"))
    st.markdown(msg("elmo.live.intro"))
    lc1, lc2, lc3 = st.columns([1, 1, 1])
    lc1.selectbox(msg("elmo.live.task"), list(task_names), format_func=task_names.get, key="elmo_live_task")
    lc2.select_slider("λ", options=[0.0, 0.001, 0.01, 0.1, 1.0, 10.0], value=0.0, key="elmo_live_lam")
    seconds = lc3.slider(msg("elmo.live.seconds"), 5, 60, 20, key="elmo_live_sec")

    mix_plot, mix_kept = elmo_views.mix_views(short, task_names)
    res = job_panel(
        "elmo_mix",
        "elmo_live",
        lambda j, **kw: tasks.train_mix_job(j, enc, n_train=200, n_test=200, **kw),
        args=lambda: {
            "task": st.session_state["elmo_live_task"],
            "l2": st.session_state["elmo_live_lam"],
            "max_seconds": st.session_state["elmo_live_sec"],
        },
        ids="elmo_live",
        phase_ids="elmo_live.phase",
        live_view=mix_plot,
        partial_view=mix_kept,
        expected_s=tasks.mix_expected_s(enc, st.session_state["elmo_live_task"], seconds),
    )
    if res:
        title = f"{task_names.get(res['task'], res['task'])}, λ = {res['l2']}"
        st.plotly_chart(
            ve.mix_history_figure(res.get("history"), short, title, msg("labels.axis.step")), width="stretch"
        )
        st.write(
            msg("elmo.live.final", metric=msg(f"labels.metric.{res.get('metric', 'accuracy')}"), **ve.live_summary(res))
        )


def usage_section(evals: dict, task_names: dict) -> None:
    """How much each task leans on each layer, or the command that writes the eval records."""
    st.subheader(msg("elmo.head.usage"))
    if ve.usage_tasks(evals):
        labels = {k: msg(f"elmo.usage.{k}") for k in ve.USAGE_KEYS}
        st.plotly_chart(ve.usage_figure(evals, task_names, labels), width="stretch")
        st.caption(msg("elmo.usage.caption"))
    else:
        st.info(msg("elmo.usage.missing"))
        widgets.for_teachers([widgets.eval_line("elmo", "pos")])

"""A lesson step with a live job (lesson.LIVE_KINDS: the fine-tuning step). Beside the question, the fine-tuning
page's own job panel (ctxlib.app.finetune_job): Start, the place in the server's line, progress and the loss curve,
Cancel; a run this session already started or finished there is the same run here. On reveal, the finished run's
result (its curve and the fine-tuned model beside the frozen probes) before the shipped figures, and the answer from
the run's own result (lesson.live_answer); until a run has finished, the shipped figures' answer, labelled so."""

from __future__ import annotations

import streamlit as st

from ctxlib import checkpoint, lesson, lesson_facts

from . import finetune_job, loaders, widgets
from .i18n import escape_md, lang, msg


def has_live(step: lesson.Step) -> bool:
    return step.kind in lesson.LIVE_KINDS


def panel(step: lesson.Step) -> None:
    """The live job's controls beside the question (nothing for a step without one). Its result stays for the reveal:
    a finished run says only that it finished."""
    if not has_live(step):
        return
    st.markdown(f"**{msg('lesson_live.head')}**")
    bert, _ = loaders.try_load("bert")
    if bert is None:
        st.info(msg("lesson_live.no_bert"))
        widgets.for_teachers([f"`{checkpoint.rebuild_command('bert')}`"])
        return
    finetune_job.settings_caption()
    st.caption(msg("lesson_live.shared"))
    res = finetune_job.panel(bert)
    if res is not None:
        st.caption(msg("lesson_live.finished", seconds=res["seconds"]))


def charts(step: lesson.Step) -> int | None:
    """How many charts the step's reveal draws, one under the other (None: the step has no live job)."""
    if not has_live(step):
        return None
    return 3 if finetune_job.result() is not None else 1  # the live curve and comparison, then the shipped figures


def result(step: lesson.Step) -> None:
    """On reveal, before the shipped figures: the finished live run, or a note that none has finished yet."""
    if not has_live(step):
        return
    res = finetune_job.result()
    if res is None:
        st.info(msg("lesson_live.no_result"))
        return
    st.markdown(f"**{msg('lesson_live.live_head')}**")
    finetune_job.result_view(res, key="lesson_ft", note=st.info)  # the page's own view of a finished run
    st.markdown(f"**{msg('lesson_live.shipped_head')}**")


def answer(step: lesson.Step, shipped: str) -> str:
    """The answer to show: for a step with a live job, the finished run's answer (from its own result) or, until
    then, `shipped` (the answer from the eval files), each labelled with where it comes from; other steps: `shipped`."""
    if not has_live(step):
        return shipped
    res = finetune_job.result()
    if res is None:
        return msg("lesson_live.label_shipped") + " " + shipped
    words = {k: msg(f"lesson_live.fact.{k}") for k in lesson_facts.LIVE_WORDS}
    text = lesson.live_answer(step, res, lang(), words, escape=escape_md, default=msg("lesson_live.answer_default"))
    return msg("lesson_live.label_live") + " " + text

"""Lesson mode: the lecture as prepared steps (a JSON file a teacher can edit and share), each one live view of the
shipped models with a question for the class; the answer and the plot stay hidden until revealed. ?step=3 links to a
step, ?lesson=<name> picks a shipped lesson. In presentation mode the answer and the plot stand beside the question,
the charts fit the screen's height, and keys move through the steps (ctxlib.app.present.keyboard)."""

import time

import streamlit as st

from ctxlib.app import lesson_live, present, state, widgets
from ctxlib.app import lesson_views as lv
from ctxlib.app.i18n import escape_md, lang, msg

_t0 = time.perf_counter()
widgets.page_header("Lesson", "lesson.title", icon="🎓")
les, key, error = lv.source()
if error is not None:
    st.error(error)
    st.info(msg("lesson.error.fix"))
    st.stop()
n = len(les.steps)
i = state.integer("lesson_step", "step", 1, 1, n)


def go(to: int) -> None:
    st.session_state["lesson_step"] = max(1, min(n, to))
    st.session_state["lesson_revealed"] = None  # the next step starts hidden


def flip(shown: bool) -> None:
    st.session_state["lesson_revealed"] = None if shown else (key, i)


c1, c2, c3 = st.columns([1, 3, 1], vertical_alignment="center")
c1.button(msg("lesson.prev"), key="lesson_prev", on_click=go, args=(i - 1,), disabled=i <= 1, width="stretch")
c2.markdown(f"**{escape_md(les.title[lang()])}** · " + msg("lesson.counter", i=i, n=n))
with c2:
    screen_h = present.keyboard("lesson_prev", "lesson_next", "lesson_reveal_btn")  # None outside presentation mode
c3.button(
    msg("lesson.next"), key="lesson_next", on_click=go, args=(i + 1,), disabled=i >= n, width="stretch", type="primary"
)
st.query_params["step"] = str(i)
step = les.steps[i - 1]

st.header(step.text("title", lang()))
if present.is_on():  # the question and answer on the left, the plot on the right: one screen, no scrolling
    left, right = st.columns([2, 3], gap="large")
    bottom = left
else:
    left, right, bottom = st.container(), st.container(), st.container()
left.markdown(f"**{msg('lesson.question')}** " + step.text("question", lang()))
with left:
    lv.inputs(step)
    lesson_live.panel(step)  # a step with a live job: Start, its place in line, progress and curve
shown = st.session_state.get("lesson_revealed") == (key, i)  # another step or lesson starts hidden
left.button(msg("lesson.hide" if shown else "lesson.reveal"), key="lesson_reveal_btn", on_click=flip, args=(shown,))
if shown:
    data = None
    with right, present.max_chart_height(lv.chart_room(step, screen_h)):
        lesson_live.result(step)  # the finished live run, before the shipped figures
        if not lv.missing_models(step):
            with st.spinner(msg("lesson.computing")):
                try:
                    data = lv.compute(step)
                except Exception as e:  # a teacher's step the model cannot run: say so, keep the page
                    widgets.show_error(
                        lv.error_text(e)
                        if isinstance(e, lv.lesson.LessonError)
                        else msg("lesson.view.failed", error=f"{type(e).__name__}: {e}")
                    )
            if data is not None:
                lv.result(step, data)
    # its {placeholders} from the model's output; a live step's from its finished job's result, else labelled shipped
    bottom.success(msg("lesson.answer") + " " + lesson_live.answer(step, lv.answer(step, data)))
if step.note:
    bottom.caption(step.text("note", lang()))
widgets.record_time("lesson", _t0)

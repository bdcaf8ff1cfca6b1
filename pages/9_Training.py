"""Training: replay how the shipped models learned, from the timeline their training recorded
(checkpoints/<model>/timeline.json + timeline.npz), or train a small model live (ctxlib.live, a background job) and
replay its timeline with the same views. One slider over the recorded steps drives every view."""

import time

import streamlit as st

from ctxlib import replay
from ctxlib.app import live_views as lv
from ctxlib.app import replay_views as rv
from ctxlib.app import state, training_views, widgets
from ctxlib.app.i18n import msg

PLAY_S = 1.5  # seconds per recorded step while playing
_t0 = time.perf_counter()
widgets.page_header("Training", "training.title")
MODES = ["replay", "live"]
state.choice("tr_mode", "mode", MODES, what=msg("live.url.mode"))
mode = st.radio(
    msg("live.mode"),
    MODES,
    key="tr_mode",
    horizontal=True,
    format_func={m: msg(f"live.mode_{m}") for m in MODES}.__getitem__,
    label_visibility="collapsed",
)
st.query_params["mode"] = mode
if mode == "live":
    st.markdown(msg("live.intro"))
    spec = lv.choices()
    lv.start_job_panel(spec)
    run = lv.finished_run()
    if run is None:
        widgets.record_time("training_live", _t0)
        st.stop()
    lv.outcome(run)
    if not run.has_timeline():
        st.caption(msg("live.no_timeline"))
        widgets.record_time("training_live", _t0)
        st.stop()
    name = str(run.out)
    lv.finished_heads(name)
    st.subheader(msg("live.replay_header"))
    have = [name]
else:
    st.markdown(msg("training.intro"))
    have = training_views.replay_models()

c1, c2, c3 = st.columns([2, 2, 2])
if mode == "replay":
    name = c1.radio(msg("training.model"), have, key="tr_model", horizontal=True)
else:
    c1.markdown(f"**live: {run.label}**")
stamp = replay.stamp(name)
try:
    rp = rv.load(name, stamp)
except ValueError as e:
    widgets.show_error(str(e))
    st.stop()
state.choice("tr_word", "word", rp.words, what=msg("training.url.word"))
word = c2.selectbox(msg("training.word"), rp.words, key="tr_word")
layer_names = widgets.layer_labels(rp.layer_names)
state.layer("tr_layer", "layer", len(layer_names))
layer = c3.selectbox(
    msg("training.layer"), list(range(len(layer_names))), format_func=layer_names.__getitem__, key="tr_layer"
)
st.query_params.update({"word": word, "layer": str(layer), **({"model": name} if mode == "replay" else {})})
steps = rp.steps
rv.ensure_index(steps)


def _play() -> None:
    st.session_state["tr_playing"] = not st.session_state.get("tr_playing", False)
    if st.session_state["tr_playing"] and st.session_state["tr_k"] >= len(steps) - 1:
        rv.set_index(0)  # play from the start again
    st.session_state["tr_tick"] = time.time()


playing = st.session_state.get("tr_playing", False)
b1, b2, b3 = st.columns([1, 2, 4])
b1.button(msg("training.pause" if playing else "training.play"), on_click=_play, key="tr_play")
same = b2.toggle(msg("training.same_size"), value=True, key="tr_same", help=msg("training.same_size_help"))
b3.caption(rv.file_sizes(rp))


@st.fragment(run_every=PLAY_S if playing else None)
def views() -> None:
    t0 = time.perf_counter()
    if st.session_state.get("tr_playing") and time.time() - st.session_state.get("tr_tick", 0) >= 0.8 * PLAY_S:
        st.session_state["tr_tick"] = time.time()
        rv.set_index(min(st.session_state["tr_k"] + 1, len(steps) - 1))
        if st.session_state["tr_k"] == len(steps) - 1:  # the end: stop (a full rerun drops run_every)
            st.session_state["tr_playing"] = False
            st.rerun()
    k = rv.step_slider(steps, msg("training.step"), msg("training.step_help"))
    st.query_params["step"] = str(steps[k])
    key = f"{name}|{stamp}"
    st.subheader(msg("training.loss.header"))
    rv.loss_view(rp, key, k)
    st.subheader(msg("training.map.header"))
    rv.map_view(rp, key, k, word, layer, layer_names, rv.projection(name, stamp, word, layer, same))
    st.subheader(msg("training.answers.header"))
    rv.answers_view(rp, key, k)
    st.subheader(msg("training.attention.header"))
    rv.attention_view(rp, name, stamp, k)
    widgets.record_time("training_step", t0)


views()
widgets.record_time("training", _t0)

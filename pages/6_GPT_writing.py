"""GPT writing: a prompt continued one character at a time, with each step's top-5 candidates and the one chosen."""

import time

import streamlit as st

from ctxlib import lexicon, writing
from ctxlib.app import loaders, state, text_fit, widgets
from ctxlib.app.i18n import msg
from ctxlib.viz import generation as vg

_t0 = time.perf_counter()
widgets.page_header("GPT writing", "gpt.title")
st.markdown(msg("gpt.intro"))
model = widgets.model_radio("gw", "gpt", view="generate")  # our GPT, or a registered left-to-right LM
enc, stamp = widgets.require_model(model or "gpt", widgets.model_label(model or "gpt"))
MAX_NEW = 120


@st.cache_data(show_spinner=False, max_entries=64)
def write(
    model: str,
    prompt: str,
    max_new: int,
    temperature: float,
    top_k: int,
    seed: int,
    rp: float,
    ng: int,
    names: bool,
    stamp: str,
) -> dict:
    return loaders.load_encoder(model).generate(
        prompt,
        max_new=max_new,
        temperature=temperature,
        top_k=top_k,
        seed=seed,
        repetition_penalty=rp,
        no_repeat_ngram=ng,
        banned_names=lexicon.kept_out() if names else None,
    )


state.init("gw_prompt", "prompt", vg.EXAMPLE_PROMPTS[0])
if "gw_temp" not in st.session_state:  # temperature 0 is not allowed (the library divides by it): it starts at 0.1
    st.session_state["gw_temp"] = vg.parse_float(st.query_params.get("t"), 0.8, 0.1, 2.0)
if "gw_rp" not in st.session_state:
    st.session_state["gw_rp"] = vg.parse_float(st.query_params.get("rp"), writing.REPETITION_PENALTY, 1.0, 2.0)
state.integer("gw_ng", "ng", writing.NO_REPEAT_NGRAM, 0, 8)
n_new = state.integer("gw_n", "n", 30, 1, MAX_NEW)
top_k = state.integer("gw_k", "k", 20, 1, 50)
seed = state.integer("gw_seed", "seed", 0, 0, 10**6)
st.pills(
    msg("textfit.examples"),
    vg.EXAMPLE_PROMPTS,
    key="gw_ex",
    on_change=lambda: st.session_state.update(gw_prompt=st.session_state["gw_ex"] or st.session_state["gw_prompt"]),
)
prompt = st.text_input(msg("gpt.prompt"), key="gw_prompt", max_chars=5000)
c1, c2, c3, c4 = st.columns(4)
temperature = c1.slider(msg("gpt.temperature"), 0.1, 2.0, step=0.05, key="gw_temp", help=msg("gpt.temperature_help"))
n_new = c2.slider(msg("gpt.max_new"), 1, MAX_NEW, key="gw_n")
top_k = c3.slider(msg("gpt.top_k"), 1, 50, key="gw_k", help=msg("gpt.top_k_help"))
seed = c4.number_input(msg("gpt.seed"), 0, 10**6, key="gw_seed", help=msg("gpt.seed_help"))
c5, c6, c7 = st.columns(3)
rp = c5.slider(msg("textfit.penalty"), 1.0, 2.0, step=0.05, key="gw_rp", help=msg("textfit.penalty_help"))
ngram = c6.number_input(msg("textfit.ngram"), 0, 8, key="gw_ng", help=msg("textfit.ngram_help"))
with c7:
    names = text_fit.names_checkbox("gw_names")
st.query_params.update(
    {
        "prompt": prompt,
        "t": f"{temperature:g}",
        "n": str(n_new),
        "k": str(top_k),
        "seed": str(seed),
        "rp": f"{rp:g}",
        "ng": str(ngram),
    }
)

problem = vg.prompt_problem(enc, prompt)
if problem:
    st.warning(msg(f"gpt.problem.{problem[0]}", n=problem[1], cap=enc.max_len - 1))
    st.stop()
with st.spinner(msg("gpt.writing")):
    res = write(
        model or "gpt",
        prompt,
        int(n_new),
        float(temperature),
        int(top_k),
        int(seed),
        float(rp),
        int(ngram),
        bool(names),
        stamp,
    )
st.subheader(msg("gpt.text_header"))
text_fit.model_note(model or "gpt", stamp)
st.html(vg.text_html(res))
st.caption(msg("gpt.text_caption"))

st.subheader(msg("gpt.steps_header"))
labels = {k: msg(f"gpt.anim.{k}") for k in ("play", "pause", "step", "outside", "probability")}
st.plotly_chart(vg.writing_figure(res["prompt"], res["steps"], labels), width="stretch", key="gw_anim")
st.caption(msg("gpt.anim_caption"))
with st.expander(msg("gpt.grid_header"), expanded=True):
    st.plotly_chart(vg.steps_figure(res["steps"], msg("gpt.grid_title")), width="stretch", key="gw_grid")
    st.caption(msg("gpt.grid_caption"))
widgets.record_time("gpt_writing", _t0)

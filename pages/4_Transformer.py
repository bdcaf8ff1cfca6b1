"""Transformer mechanics: one block of the shipped BERT or GPT taken apart, one layer and head at a time, on the model's
own weights (ctxlib.mechanics), step by step from X to the block's output, and how the model knows positions."""

import functools
import time

import streamlit as st

from ctxlib import mechanics as mech
from ctxlib.app import loaders, state, transformer_views, widgets
from ctxlib.app.i18n import msg
from ctxlib.viz import mechanics as vm

_t0 = time.perf_counter()
widgets.page_header("Transformer mechanics", "mechanics.title")
st.markdown(msg("mechanics.intro"))
choices = [m for m in ("bert", "gpt") if loaders.try_load(m)[0] is not None] or ["bert"]
state.choice("mx_model", "model", choices)
model = st.sidebar.radio(msg("mechanics.model"), choices, key="mx_model", format_func=str.upper)
st.query_params["model"] = model
enc, stamp = widgets.require_model(model, model.upper())
cfg, M = enc.model.cfg, model.upper()


@st.cache_data(show_spinner=False, max_entries=64)
def trace(model: str, text: str, layer: int, head: int, stamp: str) -> mech.BlockTrace:
    return mech.trace_block(loaders.load_encoder(model), text, layer, head)


@st.cache_data(show_spinner=False, max_entries=64)
def repeated(model: str, text: str, stamp: str) -> dict:
    return mech.repeated_char_check(loaders.load_encoder(model), text)


state.init("mx_text", "text", "苹果很好吃，苹果手机也好用")
text = st.text_input(msg("mechanics.sentence", max=mech.MAX_CHARS), key="mx_text", max_chars=5000)
c1, c2 = st.columns(2)
layer = c1.selectbox(
    msg("mechanics.layer"),
    list(range(1, cfg.layers + 1)),
    key="mx_layer",
    index=state.integer("mx_layer_init", "layer", 1, 1, cfg.layers) - 1,
)
head = c2.selectbox(
    msg("mechanics.head"),
    list(range(1, cfg.heads + 1)),
    key="mx_head",
    index=state.integer("mx_head_init", "head", 1, 1, cfg.heads) - 1,
)
st.query_params.update({"text": text, "layer": str(layer), "head": str(head)})
try:
    text = mech.check_text(text)
    tr, rep = trace(model, text, layer - 1, head - 1, stamp), repeated(model, text, stamp)
except mech.MechanicsInputError as e:
    st.warning(msg(f"mechanics.error.{e.code}", **e.values))
    st.stop()

scheme = mech.position_scheme(cfg)["scheme"]
st.info(msg(f"mechanics.scheme.{scheme}", model=M))
lab = vm.Labels(*(msg(f"mechanics.labels.{k}") for k in vm.Labels._fields))
where = msg("mechanics.where", layer=layer, head=head)
toks, d = tr.tokens, tr.q.shape[1]
fig = functools.partial(transformer_views.fig, where=where, lab=lab)
STEPS = ("qkv", "scores", "mask", "softmax", "weighted", "concat", "ffn", "positions")
tabs = st.tabs([f"{i}. {msg(f'mechanics.steps.{s}.tab')}" for i, s in enumerate(STEPS, 1)])
for s, tab in zip(STEPS, tabs):
    with tab:
        note = f"mechanics.steps.{s}.{'notice_gpt' if s == 'mask' and tr.causal else 'notice'}"
        st.markdown(msg(note, d=d, D=cfg.hidden, heads=cfg.heads, ffn=cfg.ffn, model=M))
        st.latex(mech.FORMULAS[s])
with tabs[0]:
    a, b = st.columns(2)
    fig("x", vm.token_matrix, tr.x, toks, col=a)
    fig("ln1", vm.token_matrix, tr.ln1, toks, col=b)
    for col, name in zip(st.columns(3), ("q", "k", "v")):
        fig(name, vm.token_matrix, getattr(tr, name), toks, col=col)
    if tr.rotary:
        st.caption(msg("mechanics.steps.qkv.rotary"))
        a, b = st.columns(2)
        fig("q_raw", vm.token_matrix, tr.q_raw, toks, col=a)
        fig("k_raw", vm.token_matrix, tr.k_raw, toks, col=b)
with tabs[1]:
    fig("scores", vm.pair_matrix, tr.scores, toks)
with tabs[2]:
    fig("masked", vm.pair_matrix, tr.masked, toks, keep=tr.keep)
with tabs[3]:
    fig("softmax", vm.pair_matrix, tr.weights, toks, keep=tr.keep, probabilities=True)
with tabs[4]:
    a, b = st.columns(2)
    fig("v2", vm.token_matrix, tr.v, toks, col=a)
    fig("head_out", vm.token_matrix, tr.head_out, toks, col=b)
with tabs[5]:
    fig("heads", vm.token_matrix, tr.heads, toks)
    fig("attn_out", vm.token_matrix, tr.attn_out, toks)
with tabs[6]:
    parts = {msg(f"mechanics.parts.{k}"): getattr(tr, k) for k in ("x", "attn_out", "ffn_out", "out")}
    fig("norms", vm.norms_figure, parts, toks)
    fig("ffn_hidden", vm.token_matrix, tr.ffn_hidden, toks)
    if layer == cfg.layers:
        st.caption(msg("mechanics.steps.ffn.last"))
with tabs[7]:
    transformer_views.positions_tab(tr, rep, enc, fig)
widgets.record_time("transformer", _t0)

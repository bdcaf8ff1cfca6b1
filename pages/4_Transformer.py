"""Transformer mechanics: one block of the shipped BERT or GPT taken apart, one layer and head at a time, on the model's
own weights (ctxlib.mechanics), step by step from X to the block's output, and how the model knows positions."""
import time

import streamlit as st

from ctxlib import mechanics as mech
from ctxlib.app import loaders, state, widgets
from ctxlib.app.i18n import escape_md, msg
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
layer = c1.selectbox(msg("mechanics.layer"), list(range(1, cfg.layers + 1)), key="mx_layer",
                     index=state.integer("mx_layer_init", "layer", 1, 1, cfg.layers) - 1)
head = c2.selectbox(msg("mechanics.head"), list(range(1, cfg.heads + 1)), key="mx_head",
                    index=state.integer("mx_head_init", "head", 1, 1, cfg.heads) - 1)
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


def fig(title_id: str, build, *args, col=st, tag=True, **kw) -> None:
    """One chart titled mechanics.fig.<title_id> (with the layer and head when `tag`), keyed by its id."""
    title = msg(f"mechanics.fig.{title_id}") + (f" · {where}" if tag else "")
    col.plotly_chart(build(*args, title=title, labels=lab, **kw),
                     width="stretch", key=f"mx_{title_id}")


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
    same = rep["layer0_max_diff"] == 0
    st.markdown(msg(f"mechanics.positions.{'same' if same else 'differs'}", char=escape_md(rep["char"]),
                    i=rep["positions"][0], j=rep["positions"][1], diff=rep["layer0_max_diff"],
                    diff1=rep["layer1_max_diff"], text=escape_md(rep["text"])))
    at = [f"{rep['char']} @{p}" for p in rep["positions"]]
    fig("layer0", vm.token_matrix, rep["layer0"], at, height=220, tag=False)
    if tr.rotary:
        q1, q2 = st.columns(2)
        qi = q1.selectbox(msg("mechanics.positions.query"), range(len(toks)), min(1, len(toks) - 1), format_func=lambda i: f"{i} {toks[i]}",
                         key=f"mx_qtok_{len(toks)}")
        ki = q2.selectbox(msg("mechanics.positions.key"), range(len(toks)), min(2, len(toks) - 1), format_func=lambda i: f"{i} {toks[i]}",
                         key=f"mx_ktok_{len(toks)}")
        st.caption(msg("mechanics.positions.rotary"))
        fig("rotary", vm.rotary_figure, mech.rotary_by_distance(tr.q_raw[qi], tr.k_raw[ki], cfg.max_len - 1))
    else:
        st.caption(msg("mechanics.positions.learned"))
        fig("learned", vm.position_table, mech.learned_positions(enc.model), tag=False)
    st.caption(msg("mechanics.positions.sinusoidal"))
    fig("sinusoidal", vm.position_table, mech.sinusoidal_table(cfg.max_len, cfg.hidden), tag=False)
widgets.record_time("transformer", _t0)

"""Attention (BERT or GPT): model view (all layers x heads), head view (lines), head summaries, one word across layers."""

import time

import streamlit as st

from ctxlib import checkpoint
from ctxlib.app import attention_views, loaders, state, widgets
from ctxlib.app.i18n import msg
from ctxlib.viz import attention as va
from ctxlib.viz import attention_stats as stats

_t0 = time.perf_counter()
choices = loaders.models_for("attention") or ["bert"]  # BERT, GPT and any registered Transformers model that loads
st.session_state["att_model"] = m if (m := state.choice("att_model", "model", choices)) in choices else choices[0]
gpt = widgets.is_causal(st.session_state["att_model"])  # left to right: no sentence B, no [SEP], upper triangle masked
tx = lambda key, **kw: msg(f"attention.{'gpt.' if gpt else ''}{key}", **kw)  # noqa: E731  the GPT wording where it differs
widgets.page_header("BERT attention", f"attention.{'gpt.' if gpt else ''}title")
st.markdown(tx("intro"))
model = st.sidebar.radio(msg("attention.model_choice"), choices, key="att_model", format_func=widgets.model_label)
for m in (m for m in ("bert", "gpt") if loaders.try_load(m)[0] is None):
    st.sidebar.caption(msg("common.model_missing", model=m.upper()))
    widgets.for_teachers([widgets.command_line("teachers.build", checkpoint.rebuild_command(m), model=m)])
st.query_params["model"] = model
enc, stamp = widgets.require_model(model, widgets.model_label(model))


@st.cache_data(show_spinner=False, max_entries=64)
def encode(model: str, a: str, b: str, stamp: str) -> dict:
    e = loaders.load_encoder(model)
    out = e.encode_pair(a, b) if b else e.encode([a])[0]
    return {
        "tokens": out.tokens,
        "spans": out.spans,
        "att": out.attentions,
        "layers": out.layers,
        "names": out.layer_names,
        "truncated": out.truncated,
        "seg": out.segment_ids,
    }


for k, p, d in (
    ("att_text", "text", "苹果手机很好用"),
    ("att_b", "b", ""),
    ("att_word", "word", "苹果"),
    ("att_hide", "hide", "0"),
):
    state.init(k, p, d)
if not isinstance(st.session_state["att_hide"], bool):
    st.session_state["att_hide"] = st.session_state["att_hide"] in ("1", "true", "True")
c1, c2 = st.columns([3, 1])
text = c1.text_input(tx("sentence_a"), key="att_text", max_chars=5000)
word = c2.text_input(msg("attention.follow"), key="att_word", max_chars=20).strip()
text_b = (
    ""
    if gpt or not hasattr(enc, "encode_pair")
    else st.text_input(msg("attention.sentence_b"), key="att_b", max_chars=5000)
)  # GPT: no pairs
hide = st.toggle(tx("hide"), key="att_hide")
st.query_params.update({"text": text, "b": st.session_state["att_b"], "word": word, "hide": "1" if hide else "0"})
if not text.strip():
    st.warning(msg("attention.empty"))
    st.stop()
d = encode(model, text, text_b.strip(), stamp)
if d["truncated"]:
    st.warning(tx("truncated", max_len=enc.max_len))
tokens_all = d["tokens"]
att, tokens, seg, keep = stats.visible(d["att"], tokens_all, d["seg"], hide)  # att: (L, H, T, T)
n_layers, n_heads = att.shape[:2]
ax = va.AxisLabels(*(msg(f"labels.attention.{k}") for k in va.AxisLabels._fields))  # ticks, axis titles, head kinds

tab_model, tab_head, tab_sum, tab_word = st.tabs([msg(f"attention.tabs.{k}") for k in ("model", "head", "sum", "word")])
with tab_model:
    attention_views.model_tab(att, tokens, gpt, ax)
with tab_head:
    attention_views.head_tab(att, tokens, seg, gpt, ax)
with tab_sum:
    rows = stats.head_summaries(att, tokens, gpt) if hide else stats.head_summaries(d["att"], tokens_all, gpt)
    attention_views.summary_tab(rows, n_layers, n_heads, gpt, hide, ax)
with tab_word:
    attention_views.word_tab(d, tokens, keep, text, word, hide, ax, tx)
widgets.record_time("bert_attention", _t0)

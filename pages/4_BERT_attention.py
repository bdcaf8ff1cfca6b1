"""Attention (BERT or GPT): model view (all layers x heads), head view (lines), head summaries, one word across layers."""
import time

import streamlit as st

from ctxlib import checkpoint
from ctxlib.app import loaders, state, widgets
from ctxlib.app.i18n import msg
from ctxlib.viz import attention as va
from ctxlib.viz import head_view as hv

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
    return {"tokens": out.tokens, "spans": out.spans, "att": out.attentions, "layers": out.layers,
            "names": out.layer_names, "truncated": out.truncated, "seg": out.segment_ids}


for k, p, d in (("att_text", "text", "苹果手机很好用"), ("att_b", "b", ""), ("att_word", "word", "苹果"),
                ("att_hide", "hide", "0")):
    state.init(k, p, d)
if not isinstance(st.session_state["att_hide"], bool):
    st.session_state["att_hide"] = st.session_state["att_hide"] in ("1", "true", "True")
c1, c2 = st.columns([3, 1])
text = c1.text_input(tx("sentence_a"), key="att_text", max_chars=5000)
word = c2.text_input(msg("attention.follow"), key="att_word", max_chars=20).strip()
text_b = "" if gpt or not hasattr(enc, "encode_pair") else st.text_input(msg("attention.sentence_b"), key="att_b", max_chars=5000)  # GPT: no pairs
hide = st.toggle(tx("hide"), key="att_hide")
st.query_params.update({"text": text, "b": st.session_state["att_b"], "word": word, "hide": "1" if hide else "0"})
if not text.strip():
    st.warning(msg("attention.empty"))
    st.stop()
d = encode(model, text, text_b.strip(), stamp)
if d["truncated"]:
    st.warning(tx("truncated", max_len=enc.max_len))
tokens_all = d["tokens"]
att, tokens, seg, keep = va.visible(d["att"], tokens_all, d["seg"], hide)  # att: (L, H, T, T)
n_layers, n_heads = att.shape[:2]
masked, cant_look = msg("attention.gpt.masked"), msg("attention.gpt.masked_caption")
ax = va.AxisLabels(*(msg(f"labels.attention.{k}") for k in va.AxisLabels._fields))  # ticks, axis titles, head kinds

tab_model, tab_head, tab_sum, tab_word = st.tabs([msg(f"attention.tabs.{k}") for k in ("model", "head", "sum", "word")])
with tab_model:
    st.caption(msg("attention.model.caption") + (" " + cant_look if gpt else ""))
    if "att_sel" not in st.session_state:  # shareable: ?sel=layer,head
        st.session_state["att_sel"] = va.parse_selection(st.query_params.get("sel", ""), (n_layers, 1))
    sel = va.clamp_selection(st.session_state["att_sel"], n_layers, n_heads)
    ev = st.plotly_chart(va.model_view(att, tokens, sel, causal=gpt, labels=ax), on_select="rerun", selection_mode="points",
                         key="att_model_view", width="stretch")
    click = va.clicked_head(ev)
    if click and click != st.session_state.get("att_click"):  # a new click (not the stale selection of an old one)
        st.session_state.update(att_click=click, att_sel=click)
        st.rerun()
    m1, m2 = st.columns(2)
    layer_sel = m1.number_input(msg("attention.model.layer"), 1, n_layers, sel[0], key=f"att_l_{sel}")
    head_sel = m2.number_input(msg("attention.model.head"), 1, n_heads, sel[1], key=f"att_h_{sel}")
    st.session_state["att_sel"] = (int(layer_sel), int(head_sel))
    st.query_params["sel"] = f"{int(layer_sel)},{int(head_sel)}"
    st.plotly_chart(va.attention_heatmap(att[layer_sel - 1, head_sel - 1], tokens, msg(
        "attention.model.title", layer=layer_sel, head=head_sel), causal=gpt, masked_label=masked, labels=ax),
                    width="stretch", key="att_big")

with tab_head:
    h1, h2, h3 = st.columns([1, 2, 1])
    layer = h1.selectbox(msg("attention.head.layer"), list(range(1, n_layers + 1)), index=0, key="att_hv_layer")
    heads = h2.multiselect(msg("attention.head.heads"), list(range(1, n_heads + 1)),
                           default=list(range(1, n_heads + 1)), key="att_hv_heads")
    thr = h3.slider(msg("attention.head.threshold"), 0.0, 0.3, 0.05, 0.01, key="att_hv_thr")
    labels = hv.HeadViewLabels(*(msg(f"attention.head.{k}") for k in hv.HeadViewLabels._fields))
    c_lines, c_heat = st.columns([1, 1])
    c_lines.iframe(hv.head_view_html(att[layer - 1], tokens, [h - 1 for h in heads], threshold=thr, segment_ids=seg,
                                     labels=labels), height=hv.head_view_height(len(tokens)))  # all escaped, all inline
    c_heat.plotly_chart(va.attention_heatmap(va.mean_heads(att[layer - 1], heads), tokens, msg(
        "attention.head.mean_title", layer=layer), causal=gpt, masked_label=masked, labels=ax), width="stretch", key="att_hv_heat")
    if gpt:
        c_heat.caption(cant_look)

with tab_sum:
    rows = va.head_summaries(att, tokens, gpt) if hide else va.head_summaries(d["att"], tokens_all, gpt)
    metric_names = {k: msg(f"attention.summary.metrics.{k}") for k in va.metrics_for(gpt)}
    metric = st.radio(msg("attention.summary.metric"), list(metric_names), format_func=metric_names.get,
                      horizontal=True, key="att_metric")
    st.plotly_chart(va.head_summary_figure(rows, n_layers, n_heads, metric, metric_names[metric], ax), width="stretch")
    columns = tuple(msg(f"attention.summary.{k}") for k in ("layer", "head", "kind"))
    st.dataframe(va.summary_table(rows, metric_names, columns, ax), hide_index=True)
    for note in (["attention.gpt.no_next"] if gpt else []) + (["attention.summary.hidden"] if hide else []):
        st.caption(msg(note))

with tab_word:
    idx = va.word_token_indices(d["spans"], tokens_all, text, word)
    if not word:
        st.info(msg("attention.word.none"))
    elif not idx:
        st.info(tx("word.absent", word=widgets.escape_md(word)))
    else:
        wa = va.word_attention(d["att"], idx)  # (L, T) over all tokens
        w1, w2 = st.columns([3, 2])
        w1.plotly_chart(va.word_attention_figure(va.keep_columns(wa, keep) if hide else wa, tokens, word,
                                                 msg("attention.word.attention_title", word=word), ax), width="stretch")
        cos, names = va.drift_from_layer0(d["layers"], idx), widgets.layer_labels(d["names"])
        w2.plotly_chart(va.drift_figure(cos, names, word, msg("attention.word.drift_title"), ax), width="stretch")
        st.caption(msg("attention.word.made_of", word=widgets.escape_md(word),
                       chars=" ".join(widgets.escape_md(tokens_all[i]) for i in idx)))
widgets.record_time("bert_attention", _t0)

"""BERT pre-training: fill-mask, one live pre-training example (MLM + NSP), NSP, and one position four ways
(ELMo forward, ELMo backward, GPT, BERT)."""

import time

import streamlit as st

from ctxlib.app import loaders, pretraining_sample, pretraining_views, state, widgets
from ctxlib.app.i18n import msg
from ctxlib.training.bert_data import make_example
from ctxlib.viz import pretraining as vp

_t0 = time.perf_counter()
widgets.page_header("BERT pre-training", "pretraining.title")
st.markdown(msg("pretraining.intro"))

enc, stamp = widgets.require_model("bert", "BERT")
cap = enc.max_len - 2
paragraphs = st.cache_resource(show_spinner=False)(vp.training_sample)  # loading the corpus takes a few seconds, once
ask = st.cache_data(show_spinner=False, max_entries=256)(  # a cached call of a model's method; stamp: its checkpoint's
    lambda model, method, stamp, *args, **kw: getattr(loaders.load_encoder(model), method)(*args, **kw)
)
for k, p, d in (
    ("pt_text", "text", "今天天气很好，我们去公园散步吧。"),
    ("pt_ww", "ww", "0"),
    ("pt_a", "a", "今天下了一场大雨。"),
    ("pt_b", "b", "路上的行人都打着伞。"),
    ("pt_lm", "lm", "他在银行存了一笔钱。"),
):
    state.init(k, p, d)
st.session_state["pt_ww"] = st.session_state["pt_ww"] in (True, "1", "true", "True")  # ?ww=1 → on

st.subheader(msg("pretraining.mask.header"))
text = st.text_input(msg("pretraining.mask.sentence"), key="pt_text", max_chars=5000)
whole = st.toggle(msg("pretraining.mask.whole_word"), key="pt_ww")
topk = st.slider(msg("pretraining.mask.k"), 3, 10, 5, key="pt_k")
st.query_params.update({"text": text, "ww": "1" if whole else "0"})
if not text.strip():
    st.warning(msg("pretraining.empty"))
else:
    text, toks, clipped = vp.clip_text(text, cap)
    if clipped:
        st.warning(msg("pretraining.mask.too_long", cap=cap))
    chosen = []
    if "[MASK]" not in text:
        chosen = st.pills(
            msg("pretraining.mask.pick"),
            list(range(len(toks))),
            selection_mode="multi",
            format_func=lambda i: toks[i][0],
            key=f"pt_pills_{text}",
            default=[i for i in vp.parse_indices(st.query_params.get("mask", "5")) if i < len(toks)],
        )
        st.query_params["mask"] = ",".join(map(str, chosen))
    masked, originals = vp.masked_input(text, chosen, whole)
    if "[MASK]" not in masked:
        st.info(msg("pretraining.mask.none"))
    else:
        pretraining_views.fill_mask_answer(masked, originals, topk, stamp, ask)

st.subheader(msg("pretraining.example.header"))
with st.spinner(msg("pretraining.example.loading")):
    ps = paragraphs()
opening = pretraining_sample.init_seed(enc, stamp, ps)  # the lesson's clean, rightly classified pair unless ?seed=
c1, c2, c3 = st.columns([1, 1, 2])
if c1.button(msg("pretraining.example.new"), key="pt_new"):
    st.session_state["pt_seed"] = vp.next_seed(st.session_state["pt_seed"])
seed = vp.parse_seed(c2.text_input(msg("pretraining.example.seed"), key="pt_seed"))
ex_whole = c3.toggle(msg("pretraining.example.whole_word"), key="pt_ex_ww")
st.query_params["seed"] = str(seed)
ex = make_example(seed, enc.tokenizer, ps, whole_word=ex_whole, max_len=min(64, cap + 2))
labels = {k: msg(f"pretraining.example.{k}") for k in vp.EXAMPLE_LABELS}
st.html(vp.example_html(ex, (labels["legend_mask"], labels["legend_random"], labels["legend_kept"])))
for col, (label, value) in zip(st.columns(4), vp.example_metrics(ex, labels)):
    col.metric(label, value)
st.dataframe(vp.example_rows(ex, labels), hide_index=True)
pretraining_sample.nsp_lines(ex, ask("bert", "next_sentence", stamp, ex["a_text"], ex["b_text"]), seed, opening)

pretraining_views.nsp_section(enc, stamp, ask)
pretraining_views.one_position_section(topk, ask)
widgets.record_time("bert_pretraining", _t0)

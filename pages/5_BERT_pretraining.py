"""BERT pre-training: fill-mask, one live pre-training example (MLM + NSP), NSP, and one position four ways
(ELMo forward, ELMo backward, GPT, BERT)."""
import time

import streamlit as st

from ctxlib.app import explain, loaders, pretraining_sample, results_view, state, text_fit, widgets
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
    lambda model, method, stamp, *args, **kw: getattr(loaders.load_encoder(model), method)(*args, **kw))
for k, p, d in (("pt_text", "text", "今天天气很好，我们去公园散步吧。"), ("pt_ww", "ww", "0"), ("pt_a", "a", "今天下了一场大雨。"),
                ("pt_b", "b", "路上的行人都打着伞。"), ("pt_lm", "lm", "他在银行存了一笔钱。")):
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
        chosen = st.pills(msg("pretraining.mask.pick"), list(range(len(toks))), selection_mode="multi",
                          format_func=lambda i: toks[i][0], key=f"pt_pills_{text}",
                          default=[i for i in vp.parse_indices(st.query_params.get("mask", "5")) if i < len(toks)])
        st.query_params["mask"] = ",".join(map(str, chosen))
    masked, originals = vp.masked_input(text, chosen, whole)
    if "[MASK]" not in masked:
        st.info(msg("pretraining.mask.none"))
    else:
        st.code(masked, language=None)
        if vp.mask_at_end(masked):
            st.caption(msg("pretraining.mask.at_end"))
        try:
            res = ask("bert", "fill_mask", stamp, masked, topk=topk, originals=originals)
            text_fit.model_note("bert", stamp)
            st.plotly_chart(vp.fill_mask_figure(res, originals, msg("pretraining.mask.panel"), msg("pretraining.lm.rank"),
                                                msg("pretraining.lm.unknown")), width="stretch")
            if len(res) > 8:
                st.caption(msg("pretraining.mask.first_8", n=len(res)))
            text_fit.outside_fill_mask(masked, topk, originals, ask)
        except ValueError as e:
            widgets.show_error(explain.error_text(e))

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

st.subheader(msg("pretraining.nsp.header"))
a, b = (col.text_input(msg(f"pretraining.nsp.{k}"), key=f"pt_{k}", max_chars=500) for col, k in zip(st.columns(2), "ab"))
st.query_params.update({"a": a, "b": b})
if not a.strip() or not b.strip():
    st.warning(msg("pretraining.nsp.empty"))
else:
    k1, k2 = st.columns(2)
    p_ab, p_ba = ask("bert", "next_sentence", stamp, a, b), ask("bert", "next_sentence", stamp, b, a)
    k1.metric("P(IsNext | A, B)", f"{p_ab:.2f}")
    k2.metric(msg("pretraining.nsp.control"), f"{p_ba:.2f}")
    st.caption(results_view.nsp_live_note(p_ab, p_ba))
results_view.nsp_table_section(enc.path, "python -m ctxlib eval bert --task nsp")  # measured: topic, not order

st.subheader(msg("pretraining.lm.header"))
lm_text = st.text_input(msg("pretraining.lm.sentence"), key="pt_lm", max_chars=500)
st.query_params["lm"] = lm_text
have = {m: loaders.try_load(m)[0] is not None for m in vp.POSITION_MODELS}  # BERT is loaded (see above)
stamps = {m: loaders.model_stamp(m) for m in have}
for m in (m for m in have if not have[m]):  # the others still show
    widgets.missing_model_note("pretraining.lm.missing", m, model=vp.MODEL_NAMES[m])
elmo_words = ask("elmo", "encode", stamps["elmo"], [lm_text])[0] if have["elmo"] and lm_text.strip() else None
w_tokens, spans = (elmo_words.tokens, elmo_words.spans) if elmo_words else vp.word_spans(lm_text)
if not lm_text.strip():
    st.warning(msg("pretraining.empty"))
elif not w_tokens:
    st.warning(msg("pretraining.lm.no_words"))
else:
    pos = st.select_slider(msg("pretraining.lm.position"), list(range(len(w_tokens))), value=min(3, len(w_tokens) - 1),
                           format_func=lambda i: f"{i + 1}. {w_tokens[i]}", key=f"pt_lm_pos_{lm_text}")
    titles = {k: msg(f"pretraining.lm.{k}") for k in vp.POSITION_TITLES}
    gpt_cap = loaders.load_encoder("gpt").max_len - 1 if have["gpt"] else 10**6
    words_only = st.toggle(msg("pretraining.lm.words_only"), value=True, key="pt_lm_words", disabled=not have["elmo"])
    panels, actual, punct = vp.one_position(lm_text, w_tokens, spans, pos, topk, lambda m, f, *a, **kw: ask(
        m, f, stamps[m], *a, **kw), have, titles, gpt_cap, words_only=words_only)
    st.plotly_chart(vp.one_position_figure(panels, actual), width="stretch")
    st.caption(msg("pretraining.lm.caption"))
    if punct:
        st.caption(msg("elmo.lm.punct_hidden" if words_only else "elmo.lm.punct_shown", fwd=punct["forward"],
                       bwd=punct["backward"]))
widgets.record_time("bert_pretraining", _t0)

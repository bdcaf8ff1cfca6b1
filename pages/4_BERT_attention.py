"""BERT attention: model view (all layers x heads), head view (lines), head summaries, one word across layers."""
import time

import numpy as np
import streamlit as st

from ctxlib.viz import attention as va
from ctxlib.app import loaders, state, widgets
from ctxlib.app import i18n
from ctxlib.app.i18n import t

_t0 = time.perf_counter()
widgets.page_header("BERT attention", "attention.title")
lang = i18n.lang()
st.markdown(t(
    "BERT 的每个字在每一层都同时看**左右两边**的所有字（ELMo 的两个 LSTM 各只看一边）。"
    "注意：有的头专看前一个字或后一个字，有的头把注意力「停」在 [SEP] 上；"
    "一个多义词（苹果）越往上层，向量离它与上下文无关的第 0 层向量越远。",
    "Every character attends to **both sides** at once, in every layer (ELMo's two LSTMs each see one side). "
    "Notice heads that look at the previous or next character, heads that park their attention on [SEP], and how an "
    "ambiguous word (苹果) moves away from its context-free layer-0 vector as it goes up the layers."))

enc, err = loaders.try_load("bert")
if enc is None:
    st.warning(widgets.escape_md(t("BERT 模型不可用：", "The BERT model is not available: ") + err))
    st.info(t("构建命令：", "Build it with: ") + "`python -m ctxlib train bert`")
    st.stop()
stamp = loaders.model_stamp("bert")


@st.cache_data(show_spinner=False, max_entries=64)
def encode(a: str, b: str, stamp: str) -> dict:
    e = loaders.load_encoder("bert")
    out = e.encode_pair(a, b) if b else e.encode([a])[0]
    return {"tokens": out.tokens, "spans": out.spans, "att": out.attentions, "layers": out.layers,
            "names": out.layer_names, "truncated": out.truncated, "seg": out.extra.get("segment_ids")}


for k, p, d in (("att_text", "text", "苹果手机很好用"), ("att_b", "b", ""), ("att_word", "word", "苹果"),
                ("att_hide", "hide", "0")):
    state.init(k, p, d)
if not isinstance(st.session_state["att_hide"], bool):
    st.session_state["att_hide"] = st.session_state["att_hide"] in ("1", "true", "True")
c1, c2 = st.columns([3, 1])
text = c1.text_input(t("句子（A）", "Sentence (A)"), key="att_text", max_chars=5000)
word = c2.text_input(t("要追踪的词", "Word to follow"), key="att_word", max_chars=20).strip()
text_b = st.text_input(t("可选：句子 B（组成 [CLS] A [SEP] B [SEP]）", "Optional sentence B (makes [CLS] A [SEP] B [SEP])"),
                       key="att_b", max_chars=5000)
hide = st.toggle(t("隐藏 [CLS]/[SEP] 并把每行重新归一化", "Hide [CLS]/[SEP] and renormalise each row"), key="att_hide")
st.query_params.update({"text": text, "b": text_b, "word": word, "hide": "1" if hide else "0"})
if not text.strip():
    st.warning(t("请输入一个句子。", "Please type a sentence."))
    st.stop()
d = encode(text, text_b.strip(), stamp)
if d["truncated"]:
    st.warning(t(f"文本超过模型的最大长度（{enc.config.get('max_len')} 个字，含 [CLS]/[SEP]），只显示了前面的部分。",
                 f"The text is longer than the model's maximum length ({enc.config.get('max_len')} tokens with [CLS]/[SEP]); "
                 "only the first part is shown."))
tokens_all = d["tokens"]
keep = va.keep_indices(tokens_all, hide)
att = va.renormalize(d["att"], keep) if hide else d["att"]  # (L, H, T, T)
tokens = [tokens_all[i] for i in keep]
seg = [d["seg"][i] for i in keep] if d["seg"] else None
n_layers, n_heads = att.shape[:2]

tab_model, tab_head, tab_sum, tab_word = st.tabs([t("模型视图", "Model view"), t("头视图", "Head view"),
                                                  t("各头概要", "Head summaries"), t("一个词跨层", "One word across layers")])
with tab_model:
    st.caption(t("每个小方块是一个头的注意力矩阵（行 = 发出注意力的字，列 = 被注意的字）。点一个方块放大。",
                 "Each tile is one head's attention matrix (rows attend, columns are attended). Click a tile to enlarge it."))
    if "att_sel" not in st.session_state:  # shareable: ?sel=layer,head
        q = [int(x) for x in st.query_params.get("sel", "").split(",") if x.strip().isdigit()]
        st.session_state["att_sel"] = (q[0], q[1]) if len(q) == 2 and q[0] >= 1 and q[1] >= 1 else (n_layers, 1)
    sel = st.session_state["att_sel"]
    sel = (min(sel[0], n_layers), min(sel[1], n_heads))
    ev = st.plotly_chart(va.model_view(att, tokens, sel), on_select="rerun", selection_mode="points",
                         key="att_model_view", width="stretch")
    pts = (ev or {}).get("selection", {}).get("points", [])
    click = tuple(int(x) for x in pts[0]["customdata"][:2]) if pts and pts[0].get("customdata") else None
    if click and click != st.session_state.get("att_click"):  # a new click (not the stale selection of an old one)
        st.session_state["att_click"] = click
        st.session_state["att_sel"] = click
        st.rerun()
    m1, m2 = st.columns(2)
    layer_sel = m1.number_input(t("层", "Layer"), 1, n_layers, sel[0], key=f"att_l_{sel}")
    head_sel = m2.number_input(t("头", "Head"), 1, n_heads, sel[1], key=f"att_h_{sel}")
    st.session_state["att_sel"] = (int(layer_sel), int(head_sel))
    st.query_params["sel"] = f"{int(layer_sel)},{int(head_sel)}"
    st.plotly_chart(va.attention_heatmap(att[layer_sel - 1, head_sel - 1], tokens,
                                         t(f"第 {layer_sel} 层，第 {head_sel} 个头", f"layer {layer_sel}, head {head_sel}")),
                    width="stretch", key="att_big")

with tab_head:
    h1, h2, h3 = st.columns([1, 2, 1])
    layer = h1.selectbox(t("层", "Layer"), list(range(1, n_layers + 1)), index=0, key="att_hv_layer")
    heads = h2.multiselect(t("头（每个头一种颜色）", "Heads (one colour each)"), list(range(1, n_heads + 1)),
                           default=list(range(1, n_heads + 1)), key="att_hv_heads")
    thr = h3.slider(t("隐藏小于此权重的线", "Hide lines below"), 0.0, 0.3, 0.05, 0.01, key="att_hv_thr")
    c_lines, c_heat = st.columns([1, 1])
    with c_lines:
        html_view = va.head_view_html(att[layer - 1], tokens, [h - 1 for h in heads], threshold=thr,
                                      segment_ids=seg, lang=lang)
        st.iframe(html_view, height=va.head_view_height(len(tokens)))  # every token escaped; no external resources
    with c_heat:
        mean = att[layer - 1, [h - 1 for h in heads]].mean(0) if heads else att[layer - 1].mean(0)
        st.plotly_chart(va.attention_heatmap(mean, tokens, t(f"第 {layer} 层，所选头的平均", f"layer {layer}, mean of the chosen heads")),
                        width="stretch", key="att_hv_heat")

with tab_sum:
    rows = va.head_summaries(att, tokens) if hide else va.head_summaries(d["att"], tokens_all)
    metric_names = {"entropy": t("熵（比特）", "entropy (bits)"), "sep": t("落在 [SEP] 上的比例", "share on [SEP]"),
                    "cls": t("落在 [CLS] 上的比例", "share on [CLS]"), "prev": t("看前一个字", "previous character"),
                    "next": t("看后一个字", "next character"), "self": t("看自己", "self")}
    metric = st.radio(t("指标", "Metric"), list(metric_names), format_func=metric_names.get, horizontal=True, key="att_metric")
    st.plotly_chart(va.head_summary_figure(rows, n_layers, n_heads, metric, metric_names[metric]), width="stretch")
    st.dataframe([{t("层", "layer"): r["layer"], t("头", "head"): r["head"], t("类型", "kind"): r["kind"],
                   **{metric_names[k]: round(r[k], 3) for k in metric_names}} for r in rows], hide_index=True)
    if hide:
        st.caption(t("隐藏 [CLS]/[SEP] 后，落在它们上的比例为 0。关掉开关可以看到原始比例。",
                     "With [CLS]/[SEP] hidden their shares are 0; switch it off to see the raw shares."))

with tab_word:
    idx = va.word_token_indices(d["spans"], tokens_all, text, word)
    if not word:
        st.info(t("在上面输入一个要追踪的词。", "Type a word to follow above."))
    elif not idx:
        st.info(t(f"「{widgets.escape_md(word)}」不在句子 A 中（或已被截断）。", f"'{widgets.escape_md(word)}' is not in sentence A (or was cut off)."))
    else:
        wa = va.word_attention(d["att"], idx)  # (L, T) over all tokens
        wa_v = wa[:, keep] / np.maximum(wa[:, keep].sum(1, keepdims=True), 1e-12) if hide else wa
        w1, w2 = st.columns([3, 2])
        w1.plotly_chart(va.word_attention_figure(wa_v, tokens, word, t(f"「{word}」在每一层看哪些字（各头平均）",
                                                                       f"where '{word}' looks in each layer (mean over heads)")),
                        width="stretch")
        cos = va.drift_from_layer0(d["layers"], idx)
        w2.plotly_chart(va.drift_figure(cos, d["names"], word, t("与第 0 层（无上下文）向量的余弦", "cosine with its layer-0 (context-free) vector")),
                        width="stretch")
        st.caption(t(f"「{widgets.escape_md(word)}」由这些字的向量平均得到：", f"'{widgets.escape_md(word)}' is the mean of these characters' vectors: ") +
                   " ".join(widgets.escape_md(tokens_all[i]) for i in idx))
widgets.record_time("bert_attention", _t0)

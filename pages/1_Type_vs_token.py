"""Type vs token: one vector per word type (word2vec) or one per token (ELMo, BERT)."""
import time

import numpy as np
import streamlit as st

import ctxlib
from ctxlib import examples
from ctxlib.projection import METHOD_NAMES
from ctxlib.app import loaders, state, widgets
from ctxlib.app.i18n import t
from ctxlib import explore
from ctxlib.viz import explorer
from ctxlib.viz.common import PLOTLY_CONFIG, cosine_matrix, escape

_t0 = time.perf_counter()
widgets.page_header("Type vs token · ctxlab", "type_token.title")
st.markdown(t(
    "word2vec 给每个**词类型**一个向量：所有句子里的「苹果」都落在同一点（★）。ELMo 和 BERT 给每个**词实例**（token）一个向量，"
    "随上下文变化。看看各层里的点是否按词义（颜色）分开。★ 是该模型的**类型向量**：word2vec 就是它唯一的那个向量；"
    "ELMo/BERT 是把这个词单独输入（没有上下文）时得到的向量，和实例向量在同一个空间、同一层里。",
    "word2vec gives each **word type** one vector: 苹果 lands on the same point (★) in every sentence. ELMo and BERT give each "
    "**token** its own vector, which moves with the context. Watch whether the points split by sense (colour) at each layer. "
    "★ is the model's **type vector**: word2vec's one vector, or for ELMo/BERT the word encoded alone (no context), in the "
    "same space and layer as its tokens."))

# -- inputs (shareable through the URL: ?set=活动 or ?word=..&s=..) ------------------------------
sets = list(examples.EXAMPLE_SETS)
name = state.init("tt_set", "set", examples.DEFAULT_SET)
if name not in sets:
    st.session_state["tt_set"] = name = examples.DEFAULT_SET
state.init("tt_word", "word", examples.EXAMPLE_SETS[name]["word"])
state.init("tt_text", "s", examples.example_text(name))


def _load_set():
    ex = examples.EXAMPLE_SETS[st.session_state["tt_set"]]
    st.session_state["tt_word"], st.session_state["tt_text"] = ex["word"], examples.example_text(st.session_state["tt_set"])


left, right = st.columns([1, 2])
left.selectbox(t("例句集", "Example set"), sets, key="tt_set", on_change=_load_set,
               format_func={k: t(v["title_zh"], v["title_en"]) for k, v in examples.EXAMPLE_SETS.items()}.__getitem__)
left.text_input(t("目标词", "Target word"), key="tt_word", max_chars=examples.MAX_WORD_CHARS)
right.text_area(t("句子（每行一句，可选“| 词义标签”）", "Sentences (one per line, optional '| sense label')"),
                key="tt_text", height=200)
models = widgets.models_sidebar("tt")
method = st.sidebar.radio(t("投影", "Projection"), list(METHOD_NAMES), format_func=METHOD_NAMES.get,
                          index=list(METHOD_NAMES).index(state.init("tt_proj", "proj", "pca")), key="tt_proj_w")
st.sidebar.caption(t("图右上角的相机按钮可下载 PNG。", "Download a PNG with the camera button at the top right of each plot."))
widgets.share_hint()

word, pairs, msgs = examples.check_inputs(st.session_state["tt_word"], st.session_state["tt_text"])
for level, zh, en in msgs:
    getattr(st, level)(widgets.escape_md(t(zh, en)))
ex = examples.EXAMPLE_SETS[name]
custom = st.session_state["tt_word"] != ex["word"] or st.session_state["tt_text"] != examples.example_text(name)
st.query_params.update({"set": name, "proj": method, **({"word": st.session_state["tt_word"],
                        "s": st.session_state["tt_text"][:examples.MAX_INPUT_CHARS]} if custom else {})})
for k in ("word", "s"):
    if not custom and k in st.query_params:
        del st.query_params[k]
if any(level == "error" for level, _, _ in msgs) or not models:
    st.stop()

texts, labels = tuple(s for s, _ in pairs), [lab for _, lab in pairs]
hover = [explorer.mark_word(s, *explore.find_first(s, word)) for s in texts]
data, stamps = {}, {m: loaders.model_stamp(m) for m in models}
with st.spinner(t("正在编码句子…", "Encoding the sentences…")):
    for m in models:
        try:
            data[m] = loaders.word_tokens(m, word, texts, stamps[m])
        except Exception as e:  # a model failing must not take the other models down
            widgets.show_error(f"{m}: {type(e).__name__}: {e}")
if not data:
    st.stop()
layers = widgets.layer_pickers("tt", {m: d.layer_names for m, d in data.items()})

for m, d in data.items():
    if not d.in_vocab:
        st.warning(widgets.escape_md(t(f"{m} 的词表里没有“{word}”：它对没见过的词没有向量（全为 0）。ELMo 从字符构造向量，BERT 用单字。",
                                  f"'{word}' is not in {m}'s vocabulary: it has no vector for an unseen word (all zeros). "
                                  "ELMo builds one from characters; BERT uses the single characters.")))
cols = st.columns(max(1, len(data)))
for col, (m, d) in zip(cols, data.items()):
    j = layers[m]
    X = np.vstack([d.type_vec[j][None], d.vecs[:, j]])
    xy = loaders.projected(f"{m}|{stamps[m]}|{word}|{texts}|{j}", X, method)
    with col:
        fkey = f"{m}|{stamps[m]}|{word}|{pairs}|{j}|{method}"
        st.plotly_chart(loaders.cached_figure("map|" + fkey, lambda: explorer.type_token_map(
            xy, hover, labels if any(labels) else None, title=f"{m} · {d['layer_names'][j]}",
            type_name=t("类型向量 ★", "type vector ★"), token_name=t("实例", "token"),
            type_hover=escape(t(f"★「{word}」单独输入、没有上下文时的向量", f"★ '{word}' encoded alone, without context")))),
            config=PLOTLY_CONFIG, key=f"map_{m}")
        cos = [ctxlib.cosine(v, d.type_vec[j]) for v in d.vecs[:, j]]
        st.caption(t(f"实例与类型向量的平均余弦：{np.mean(cos):.3f}", f"Mean cosine of tokens to the type vector: {np.mean(cos):.3f}"))
        st.plotly_chart(loaders.cached_figure("heat|" + fkey, lambda: explorer.similarity_heatmap(
            cosine_matrix(d.vecs[:, j]), list(texts), hover, labels=labels,
            title=t("实例之间的余弦相似度", "Cosine similarity of the tokens"))),
            config=PLOTLY_CONFIG, key=f"heat_{m}")

tab_acc, tab_near, tab_seg, tab_csv = st.tabs([t("词义分类准确率", "Sense accuracy"), t("最近的词", "Nearest words"),
                                               t("分词", "Segmentation"), t("导出", "Export")])
with tab_near:
    st.caption(t("每个实例向量在该层最接近的词表词（每个词单独输入时的向量），数字是余弦。",
                 "The vocabulary words (each encoded alone) closest to each token vector at the chosen layer, with cosines."))
    if st.toggle(t("计算最近的词（首次需编码词表，约几秒到几十秒）", "Compute nearest words (the first time encodes the vocabulary: seconds)"),
                 value=state.init("tt_near", "near", "0") == "1", key="tt_near_w", on_change=state.flag, args=("tt_near_w", "near")):
        with st.spinner(t("正在为词表编码…", "Encoding the vocabulary…")):
            st.dataframe({t("句子", "sentence"): texts, **{m: loaders.nearest_table(m, word, texts, layers[m], stamps[m])
                                                           for m in data}}, hide_index=True)
with tab_seg:
    st.caption(t("模型实际使用的切分；【】是取平均得到词向量的那些 token（BERT 按字切分）。",
                 "The segmentation each model used; the tokens in 【】 were averaged into the word's vector (BERT uses characters)."))
    st.dataframe(explore.segmentation_table(data, texts, t("句子", "sentence"), t("取平均的字", "pooled characters")), hide_index=True)
with tab_acc:
    acc = explore.sense_accuracy(data, labels)
    if acc is None:
        st.info(t("给每个句子加上词义标签（如“苹果真好吃 | 水果”，至少两类、每类至少两句），就能看到每层的留一法最近质心准确率。",
                  "Add a sense label to every sentence (e.g. '苹果真好吃 | 水果'; two or more labels, two or more sentences each) "
                  "to see leave-one-out nearest-centroid accuracy per layer."))
    else:
        res, chance = acc
        st.caption(t("每个句子用其余句子的各类中心来分类（余弦最近者）；虚线是总猜最多那一类的准确率。",
                     "Each sentence is classified by the nearest (cosine) class centre of the other sentences; the dotted "
                     "line is the accuracy of always guessing the largest class."))
        st.plotly_chart(loaders.cached_figure(f"acc|{res}|{chance}", lambda: explorer.layer_accuracy_chart(
            res, chance, title=t("每层的词义分类准确率（留一法，最近质心）", "Sense accuracy per layer (leave-one-out nearest centroid)"),
            x_title=t("层", "layer"), y_title=t("准确率", "accuracy"))), config=PLOTLY_CONFIG, key="acc")
        st.dataframe([{"model": m, "layer": n, "accuracy": round(a, 3)} for m, (ns, accs) in res.items()
                      for n, a in zip(ns, accs)], hide_index=True)
with tab_csv:
    st.download_button(t("下载向量（CSV）", "Download the vectors (CSV)"), loaders.vectors_csv(data, texts, labels, word),
                       file_name=f"ctxlab_{word}_vectors.csv", mime="text/csv")
    st.caption(t("每行：模型、层、句子、标签、向量各维。图片可用每张图右上角的相机按钮下载（PNG）。",
                 "One row per model, layer and sentence, then the vector. Figures: camera button at each plot's top right (PNG)."))
widgets.record_time("type_token", _t0)

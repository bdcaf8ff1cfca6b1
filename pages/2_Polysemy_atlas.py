"""Polysemy atlas: every corpus occurrence of a word, one point per token (after Coenen et al. 2019, Context Atlas)."""
import time

import streamlit as st

from ctxlib import analysis
from ctxlib.corpus import SOURCE_NAMES
from ctxlib.projection import METHOD_NAMES, cluster_top_words, kmeans
from ctxlib.app import loaders, state, widgets
from ctxlib.app.i18n import t
from ctxlib import explore
from ctxlib.viz import explorer
from ctxlib.viz.common import PLOTLY_CONFIG, escape

_t0 = time.perf_counter()
widgets.page_header("Polysemy atlas · ctxlab", "atlas.title")
st.markdown(t(
    "取出一个词在语料（人民日报 1998-01、评论，以及为本项目编写的教学补充句）中的所有出现，每个实例一个点。在上下文模型的高层，点会按词义或词性聚成几团；"
    "word2vec 的所有点重合。下方的图是 Ethayarajh (2019) 的**自相似度**：同一个词各实例之间的平均余弦，"
    "与随机词之间的平均余弦（各向异性基线）相比，越接近基线说明上下文改变得越多。",
    "All occurrences of a word in the corpus (People's Daily 1998-01, reviews, and the teaching supplement written for "
    "this project), one point per token. At a contextual model's "
    "higher layers the points gather by sense or part of speech; word2vec's all coincide. The chart below is Ethayarajh's (2019) "
    "**self-similarity**: the mean cosine between the word's tokens, against the mean cosine between random tokens (the "
    "anisotropy baseline); the closer to the baseline, the more the context changed the vectors."))

model = widgets.model_radio("at")
state.choice("at_colour", "colour", ["pos", "source", "kmeans"])
state.choice("at_proj", "proj", list(METHOD_NAMES))
c1, c2, c3, c4 = st.columns([1, 1, 1, 1])
word = c1.text_input(t("词", "Word"), value=state.init("at_word", "word", "发展"), key="at_word_w", max_chars=12).strip()
caps = [50, 100, 200, 300, 500, 1000]
state.integer("at_cap", "cap", 300, caps[0], caps[-1], caps)
cap = c2.select_slider(t("最多取多少个实例", "Cap on occurrences"), caps, key="at_cap")
colour = c3.radio(t("着色", "Colour by"), ["pos", "source", "kmeans"], horizontal=True, key="at_colour",
                  format_func={"pos": t("词性（人民日报）", "POS (People's Daily)"), "source": t("语料来源", "source"),
                               "kmeans": t("k-means 聚类", "k-means cluster")}.__getitem__)
state.integer("at_k", "k", 3, 2, 8)
k = c4.slider("k", 2, 8, key="at_k", disabled=colour != "kmeans")
method = st.sidebar.radio(t("投影", "Projection"), list(METHOD_NAMES), format_func=METHOD_NAMES.get, key="at_proj")
st.sidebar.caption(t("图右上角的相机按钮可下载 PNG。", "Download a PNG with the camera button at the top right of each plot."))
widgets.share_hint()
if not word or model is None:
    st.info(t("请输入一个词。", "Type a word.") if model else t("没有可用的模型。", "No model is available."))
    st.stop()

with st.spinner(t(f"正在查找并编码“{word}”的实例…", f"Finding and encoding the occurrences of {word}…")):
    d = loaders.atlas_vectors(model, word, int(cap), loaders.model_stamp(model))
n = len(d.texts)
if n < 3:
    st.warning(widgets.escape_md(t(f"语料里只找到 {d['total']} 个作为整词出现的“{word}”，太少，画不出图谱。试试 活动、发展、地、还、运动。",
                              f"Only {d['total']} occurrences of '{word}' as a whole word in the corpus: too few for an atlas. "
                              "Try 活动, 发展, 地, 还 or 运动.")))
    st.stop()
st.caption(t(f"语料中共有 {d['total']} 个实例，随机抽取 {n} 个（上限 {cap}）。", f"{d['total']} occurrences in the corpus; "
             f"a random sample of {n} is shown (cap {cap})."))
names = d.layer_names
state.integer("at_layer", "layer", len(names) - 1, 0, len(names) - 1)
layer = st.select_slider(t("层", "Layer"), list(range(len(names))), key="at_layer",
                         format_func=lambda j: f"{j}: {names[j]}") if len(names) > 1 else 0
X = d.vecs[:, layer]
xy = loaders.projected(f"atlas|{loaders.model_stamp(model)}|{word}|{cap}|{layer}", X, method)
clusters = kmeans(X, k) if colour == "kmeans" else None
if colour == "kmeans":
    cats = [f"C{c + 1}" for c in clusters]
elif colour == "source":
    cats = [SOURCE_NAMES.get(s, s) for s in d.sources]
else:
    cats = [tag or t("无（评论）", "none (reviews)") for tag in d.tags]
words = cluster_top_words(d.contexts, cats, topn=3, exclude=(word,)) if colour == "kmeans" else None
hover = [explorer.mark_word(s, a, b) + f"<br>{escape(c)} · {escape(src)}" for s, (a, b), c, src in
         zip(d.texts, d.spans, cats, d.sources)]
st.plotly_chart(explorer.atlas_map(xy, hover, cats, title=f"{word} · {model} · {names[layer]} · {METHOD_NAMES[method]}",
                                cluster_words=words), config=PLOTLY_CONFIG, key="atlas")
if words:
    st.dataframe([{t("聚类", "cluster"): c, t("实例数", "size"): cats.count(c), t("最常见的上下文词", "top context words"): " · ".join(ws)}
                  for c, ws in sorted(words.items())], hide_index=True)

others = [m for m in loaders.MODEL_ORDER if m != model and loaders.try_load(m)[1] is None]
compare = st.checkbox(t("与其他模型对比自相似度（要为每个模型编码一遍，较慢）", "Compare self-similarity with the other models "
                        "(encodes the occurrences with each model: slower)"), key="at_compare", disabled=not others)
sims = {}
for m in [model] + (others if compare else []):
    with st.spinner(t(f"正在用 {m} 编码…", f"Encoding with {m}…")):
        dm = d if m == model else loaders.atlas_vectors(m, word, int(cap), loaders.model_stamp(m))
    sims[m] = (dm.layer_names, [analysis.self_similarity(dm.vecs[:, j]) for j in range(len(dm.layer_names))],
               [analysis.anisotropy(dm.base[:, j]) for j in range(len(dm.layer_names))])
st.caption(t("自相似度减去基线越小，说明这一层的向量越依赖上下文（Ethayarajh 2019 的“经各向异性校正的自相似度”）。",
             "The smaller self-similarity minus the baseline, the more context-specific the layer (Ethayarajh's 2019 "
             "anisotropy-adjusted self-similarity)."))
st.plotly_chart(explorer.self_similarity_chart(sims, title=t(f"“{word}”的自相似度与各向异性基线", f"Self-similarity of {word} and the anisotropy baseline"),
                                            self_name=t("自相似度", "self-similarity"), base_name=t("随机词基线", "random-token baseline"),
                                            x_title=t("层", "layer")), config=PLOTLY_CONFIG, key="selfsim")
st.download_button(t("下载这一层的向量（CSV）", "Download this layer's vectors (CSV)"),
                   explore.atlas_csv(d, layer, cats), file_name=f"ctxlab_atlas_{word}_{model}_layer{layer}.csv", mime="text/csv")
st.query_params.update({"word": word, "cap": str(cap), "model": model, "layer": str(layer), "colour": colour, "k": str(k),
                        "proj": method})
widgets.record_time("atlas", _t0)

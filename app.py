"""ctxlab home: the lecture in brief, a live 苹果 demo, and the models that are loaded."""
import time
from pathlib import Path

import streamlit as st

from ctxlib import plots, ui

_t0 = time.perf_counter()
ui.page_header("ctxlab", "ctxlab：上下文词向量",
               "ctxlab: contextual word embeddings", icon="🍎")
t = ui.t
st.markdown(t(
    "一个词，在不同的句子里，是同一个向量吗？这里有三个在人民日报（1998 年 1 月）和商品/酒店评论上训练的小模型："
    "**word2vec**、**ELMo** 和 **BERT**，用来亲手检验这一讲的几个论断。",
    "Is a word the same vector in every sentence? Three small models trained on People's Daily (January 1998) and product/hotel "
    "reviews, **word2vec**, **ELMo** and **BERT**, let you check the lecture's claims for yourself."))

with st.expander(t("这一讲的要点", "The lecture in brief"), expanded=True):
    c1, c2, c3 = st.columns(3)
    c1.markdown(t(
        "#### 1. 静态词向量的两个局限\n"
        "word2vec 从一个小滑动窗口学习，给每个**词类型**一个固定向量。于是：\n"
        "- **词义被混在一起**：「苹果」既是水果也是公司，却只有一个向量；\n"
        "- **语法角色也被混在一起**：「活动」可作名词（参加活动）也可作动词（活动一下），还可以作主语或谓语。\n\n"
        "**类型与实例**就像**类与对象**：词表里的「苹果」是类型，句子里出现的每个「苹果」是一个实例（token）。"
        "上下文词向量给每个实例一个自己的向量。",
        "#### 1. Two limits of static vectors\n"
        "word2vec learns from a small sliding window and gives each **word type** one fixed vector. So:\n"
        "- **senses are blended**: 苹果 is a fruit and a company, yet has one vector;\n"
        "- **roles are blended**: 活动 is a noun (参加活动, join an event) and a verb (活动一下, move about), "
        "a subject or a predicate.\n\n"
        "**Type vs token** is like **class vs instance**: 苹果 in the vocabulary is the type; each 苹果 in a sentence is a "
        "token. Contextual embeddings give every token its own vector."))
    c2.markdown(t(
        "#### 2. ELMo（Peters 等，2018）\n"
        "- 输入是**字符 CNN** 得到的词向量 x：任何词（包括没见过的词）都有向量；\n"
        "- 上面是前向和后向两个 **LSTM 语言模型**，各 L=2 层，读整句，远处的上下文也起作用；\n"
        "- 每一层都是特征，共 **2L+1** 个；任务用 softmax 归一化的权重 s 和缩放 γ 把它们混合："
        "ELMo = γ Σⱼ sⱼ hⱼ；\n"
        "- 不同任务偏好不同的层（指代消解、SQuAD 更重第一层）：低层偏句法，高层偏语义；\n"
        "- 作为任务模型的输入，或拼接到隐藏层；在许多任务上提升约 3 个点。前身：TagLM、CoVe。",
        "#### 2. ELMo (Peters et al., 2018)\n"
        "- input: a **character CNN** word vector x, so any word (even an unseen one) has a vector;\n"
        "- above it, forward and backward **LSTM language models**, L=2 layers each, read the whole sentence, so "
        "long-range context counts;\n"
        "- every layer is a feature, **2L+1** in all; a task mixes them with softmax-normalised weights s and a scale γ: "
        "ELMo = γ Σⱼ sⱼ hⱼ;\n"
        "- tasks prefer different layers (coreference and SQuAD weight the first layer more): lower layers hold more "
        "syntax, higher layers more semantics;\n"
        "- used as the task model's input or concatenated to its hidden layer; about 3 points better on many tasks. "
        "Predecessors: TagLM, CoVe."))
    c3.markdown(t(
        "#### 3. BERT（Devlin 等，2019）\n"
        "- **Transformer 编码器**：用注意力取代循环，可以并行训练；\n"
        "- **掩码语言模型**：遮住 15% 的字（其中 80% 换成 [MASK]、10% 换成随机字、10% 不变）再预测，像完形填空，"
        "也像用注意力代替窗口的 CBOW；\n"
        "- **下一句预测**：[CLS] A [SEP] B [SEP]，判断 B 是否真是 A 的下一句；\n"
        "- 注意力**同时看到左右两边**；ELMo 的两个方向分开训练，彼此看不到；\n"
        "- 微调时在上面加一个小的输出层；全面超过 ELMo。中文 BERT 按**字**切分，词向量取字向量的平均。",
        "#### 3. BERT (Devlin et al., 2019)\n"
        "- a **Transformer encoder**: attention instead of recurrence, so it trains in parallel;\n"
        "- **masked LM**: hide 15% of the tokens (80% [MASK], 10% a random token, 10% kept) and predict them, a cloze task, "
        "close to CBOW with attention in place of the window;\n"
        "- **next-sentence prediction**: [CLS] A [SEP] B [SEP], is B really A's next sentence?\n"
        "- its attention **sees both sides at once**; ELMo's two directions are trained apart and never see each other;\n"
        "- fine-tuning puts a small head on top; it beat ELMo across the board. Chinese BERT uses **characters**; a word's "
        "vector is the mean of its characters'."))

st.header(t("现场演示：两个「苹果」", "Live demo: two 苹果s"))
word = st.text_input(t("目标词", "Word"), value=ui.qp_init("home_word", "word", "苹果"), key="home_word_w", max_chars=12)
a_col, b_col = st.columns(2)
s1 = a_col.text_input(t("句子 A", "Sentence A"), value=ui.qp_init("home_a", "a", "苹果真好吃"), key="home_a_w", max_chars=300)
s2 = b_col.text_input(t("句子 B", "Sentence B"), value=ui.qp_init("home_b", "b", "苹果手机很好用"), key="home_b_w", max_chars=300)
st.query_params.update({"word": word, "a": s1, "b": s2})
_, problems = ui.demo_cosines([], word, s1, s2)  # input problems only
for zh, en in problems:
    st.warning(ui.escape_md(t(zh, en)))
chart, notes = st.empty(), st.container()
rows, status = [], {}
for m in ui.MODEL_ORDER:  # model by model, so word2vec's bar shows while ELMo and BERT still load
    with st.spinner(t(f"正在加载 {m}…", f"Loading {m}…")):
        status[m] = ui.try_load(m)[1]
        new, msgs = ui.demo_cosines([m], word, s1, s2) if status[m] is None and not problems else ([], [])
    for zh, en in msgs:
        notes.warning(ui.escape_md(t(zh, en)))
    if new:
        rows += new
        chart.plotly_chart(plots.cosine_bars(rows, title=t(f"两个「{word}」向量的余弦相似度（每个模型、每一层）",
                                                           f"Cosine similarity of the two {word} vectors, per model and layer"),
                                             y_title="cos"), config=plots.PLOTLY_CONFIG)
loaded = [m for m, err in status.items() if err is None]
if not loaded:
    st.warning(t("还没有可用的模型。先训练一个：`python -m ctxlib train word2vec`（几分钟），下面列出了每个模型的构建命令。",
                 "No model is available yet. Train one first: `python -m ctxlib train word2vec` (a few minutes); "
                 "each model's build command is listed below."))
if rows:
    st.caption(t("word2vec 只有类型向量，两个句子里的向量完全相同，余弦正好是 1。ELMo 和 BERT 的向量随上下文改变，余弦小于 1；"
                 "越高的层通常越小。", "word2vec has only the type vector: the two vectors are identical and the cosine is exactly 1. "
                 "ELMo's and BERT's vectors change with the context, so their cosine is below 1, usually lower at higher layers."))

st.header(t("模型", "Models"))
st.caption(t("每个模型都在同一份语料的训练集上训练；训练记录来自 checkpoints/<模型>/config.json。",
             "Every model was trained on the same corpus's train split; the record comes from checkpoints/<model>/config.json."))
st.dataframe(ui.model_rows(status), hide_index=True)
for m, err in status.items():
    if err is not None:
        st.caption(ui.escape_md(f"{m}: {err}"))
with st.expander(t("完整的配置与训练记录", "Full configuration and training record")):
    for m in loaded:
        st.markdown(f"**{m}**")
        st.json(ui.model_record(m), expanded=False)

st.header(t("页面", "Pages"))
for page in sorted(Path(__file__).parent.glob("pages/*.py")):
    st.page_link(str(page.relative_to(Path(__file__).parent)), label=ui.page_label(page.stem))
    if page.stem.split("_", 1)[-1] in ui.PAGE_HINTS:
        st.caption(t(*ui.PAGE_HINTS[page.stem.split("_", 1)[-1]]))
ui.record_time("home", _t0)
ui.prewarm_corpus()  # after the page is drawn: the atlas page needs the corpus

"""ELMo layers and mixing: the 2L+1 vectors of a word, the two LMs, and the task-specific layer weights."""
import time

import numpy as np
import streamlit as st

from ctxlib.viz import elmo as ve
from ctxlib.app import loaders, state, widgets
from ctxlib.app import i18n
from ctxlib.app.i18n import t

_t0 = time.perf_counter()
widgets.page_header("ELMo layers", "elmo.title")
lang = i18n.lang()
st.markdown(t(
    "ELMo 给每个词 **2L+1 = 5 个向量**：字符 CNN 得到的词向量 x，以及两层双向 LSTM 的前向、后向状态。"
    "前向语言模型只看左边，后向只看右边，两者从不互相看见。下游任务学习一组 softmax 权重 s_j 和缩放 γ，"
    "把各层加权求和：**ELMo = γ Σ s_j h_j**；不同任务学到的权重不同。",
    "ELMo gives each word **2L+1 = 5 vectors**: the char-CNN token vector x and the forward and backward states of "
    "two biLSTM layers. The forward LM sees only the left context, the backward LM only the right; they never see "
    "each other. A task learns softmax weights s_j and a scale γ: **ELMo = γ Σ_j s_j h_j**, and different tasks "
    "learn different weights."))

enc, err = loaders.try_load("elmo")
if enc is None:
    st.warning(widgets.escape_md(t("ELMo 模型不可用：", "The ELMo model is not available: ") + err))
    st.info(t("构建命令：", "Build it with: ") + "`python -m ctxlib train elmo`")
    st.stop()
stamp = loaders.model_stamp("elmo")
TASKS = {"pos": t("词性 (POS)", "POS tags"), "ner": t("人名/地名/机构名", "names (NER)"), "sentiment": t("情感", "sentiment")}


@st.cache_data(show_spinner=False, max_entries=64)
def encode(text: str, word: str, stamp: str) -> dict:
    e = loaders.load_encoder("elmo").encode([text], target=word or None)[0]
    return {"tokens": e.tokens, "layers": e.layers, "names": e.layer_names, "truncated": e.truncated}


@st.cache_data(show_spinner=False, max_entries=64)
def lm_topk(text: str, index: int, word: str, stamp: str) -> dict:
    return loaders.load_encoder("elmo").lm_topk(text, index, k=20, target=word or None)


c1, c2 = st.columns([3, 1])
state.init("elmo_text", "text", "我用苹果手机给妈妈打电话")
state.init("elmo_word", "word", "苹果")
text = c1.text_input(t("句子", "Sentence"), key="elmo_text", max_chars=5000)
word = c2.text_input(t("目标词（保持为一个词）", "Target word (kept as one token)"), key="elmo_word", max_chars=20).strip()
st.query_params.update({"text": text, "word": word})
if not text.strip():
    st.warning(t("请输入一个句子。", "Please type a sentence."))
    st.stop()
data = encode(text, word if word and word in text else "", stamp)
tokens = data["tokens"]
if data["truncated"]:
    st.warning(t("句子太长，只编码了前 2000 个字符。", "The text is long; only its first 2,000 characters were encoded."))
if not tokens:
    st.warning(t("这个句子没有可编码的词。", "This text has no words to encode."))
    st.stop()
if word and word not in text:
    st.info(t(f"「{widgets.escape_md(word)}」不在句子里；请在下面选一个词。", f"'{widgets.escape_md(word)}' is not in the sentence; pick a word below."))
default_pos = tokens.index(word) if word in tokens else 0
pos = st.select_slider(t("选择一个词", "Pick a word"), options=list(range(len(tokens))), value=default_pos,
                       format_func=lambda i: f"{i + 1}. {tokens[i]}", key=f"elmo_pos_{hash((text, word))}")
names = ve.vector_names((data["layers"].shape[0] - 1), lang)

st.subheader(t("1. 句子流过 ELMo", "1. The sentence flowing through ELMo"))
st.plotly_chart(ve.architecture_figure(tokens, data["layers"], pos, lang), width="stretch")

tok_md = widgets.escape_md(tokens[pos])
st.subheader(t(f"2. 「{tok_md}」的 2L+1 个向量", f"2. The 2L+1 vectors of '{tok_md}'"))
parts = ve.split_states(data["layers"])
vecs = np.stack([v[pos] for v in parts.values()])  # (2L+1, d)
st.plotly_chart(ve.layer_vectors_figure(vecs, names, tokens[pos]), width="stretch")
if st.toggle(t("显示每层最近的词（第一次需要几秒）", "Show each layer's nearest words (a few seconds the first time)"),
             key="elmo_nn"):
    with st.spinner(t("计算词表向量……", "Encoding the vocabulary…")):
        e = loaders.load_encoder("elmo")
        rows = {data["names"][j]: "  ".join(f"{w} {s:.2f}" for w, s in e.nearest_words(data["layers"][j, pos], j, topn=6,
                                                                                         exclude=(tokens[pos],)))
                for j in range(data["layers"].shape[0])}
    st.table({t("层", "layer"): list(rows), t("最近的词 (cos)", "nearest words (cos)"): list(rows.values())})

st.subheader(t("3. 两个语言模型在这个位置的预测", "3. The two language models at this position"))
lm = lm_topk(text, pos, word if word and word in text else "", stamp)
left = ve.context_label(tokens[:pos], "left", 20)
right = ve.context_label(tokens[pos + 1:], "right", 20)
st.plotly_chart(ve.lm_bars_figure(
    ve.drop_specials(lm["forward"], 10), ve.drop_specials(lm["backward"], 10), tokens[pos],
    (t(f"前向 LM：只读了「{left}」", f"forward LM, has read only: {left}"),
     t(f"后向 LM：只读了「{right}」", f"backward LM, has read only: {right}"))), width="stretch")
st.caption(t("红色条 = 句子里真实的词。两个模型都看不到对方那一侧的上下文。`<unk>`、`<S>`、`</S>` 等符号不列出。",
             "Red bar = the word actually there. Neither model sees the other side of the sentence. "
             "Symbols such as `<unk>`, `<S>`, `</S>` are not listed."))

st.subheader(t("4. 各任务学到的层权重", "4. The layer weights each task learned"))
evals, missing = ve.read_evals(enc.path, TASKS)
short = [t("x 词层", "x token"), t("biLSTM 1", "biLSTM 1"), t("biLSTM 2", "biLSTM 2")]
for task in missing:
    st.info(t(f"{TASKS[task]}：还没有评测文件。生成命令：", f"{TASKS[task]}: no eval file yet. Create it with: ") +
            f"`python -m ctxlib eval elmo --task {task}`")
if evals:
    st.plotly_chart(ve.mix_weights_figure(evals, short, TASKS), width="stretch")
    cols = st.columns(len(evals))
    for col, (task, ev) in zip(cols, evals.items()):
        col.plotly_chart(ve.probe_scores_figure(ev, short, {"mix": t("ELMo 混合", "ELMo mix"), "title": TASKS[task]}),
                         width="stretch", key=f"probe_{task}")
    st.caption(t("上：任务模型（ELMo 作输入）学到的 softmax(s_j)；E[j] = Σ j·s_j，0 表示全在词层，2 表示全在顶层。"
                 "下：同一个线性探针分别用 word2vec 向量（灰）、ELMo 的每一层、以及全部层的混合。",
                 "Top: softmax(s_j) learned by the task model (ELMo as input); E[j] = Σ j·s_j, 0 = all weight on the token "
                 "layer, 2 = all on the top layer. Below: the same linear probe on word2vec vectors (grey), on each single "
                 "ELMo layer, and on the mix of all layers."))

st.subheader(t("5. 现场训练混合权重", "5. Train the mix live"))
st.markdown(t("只训练 ScalarMix（s_j 与 γ）和一个线性分类头，ELMo 本身冻结。λ 越大，权重越被拉向均匀分布（论文中的正则化）。",
              "Only the ScalarMix (s_j and γ) and a linear head are trained; ELMo stays frozen. A large λ pulls the "
              "weights towards uniform (the paper's regulariser)."))
lc1, lc2, lc3 = st.columns([1, 1, 1])
live_task = lc1.selectbox(t("任务", "Task"), list(TASKS), format_func=TASKS.get, key="elmo_live_task")
lam = lc2.select_slider("λ", options=[0.0, 0.001, 0.01, 0.1, 1.0, 10.0], value=0.0, key="elmo_live_lam")
seconds = lc3.slider(t("最多秒数", "Max seconds"), 5, 60, 20, key="elmo_live_sec")
if st.button(t("开始训练", "Train"), key="elmo_live_go", type="primary"):
    bar = st.progress(0.0, text=t("提取 400 个句子的 ELMo 特征（每个任务只在第一次）……",
                                  "Extracting ELMo features of 400 sentences (first time per task only)…"))
    try:
        res = ve.train_mix(enc, live_task, lam, seconds, lambda s, n, w: bar.progress(
            min(1.0, s / max(n, 1)), text=f"{s}/{n}  s = " + ", ".join(f"{x:.2f}" for x in w)))
        st.session_state["elmo_live"] = (live_task, lam, res)
    except Exception as e:  # a failed run must not take the page down
        widgets.show_error(t("训练失败：", "Training failed: ") + f"{type(e).__name__}: {e}")
    bar.empty()
if "elmo_live" in st.session_state:
    task0, lam0, res = st.session_state["elmo_live"]
    st.plotly_chart(ve.mix_history_figure(res.get("history"), short, f"{TASKS.get(task0, task0)}, λ = {lam0}"), width="stretch")
    w = res.get("mix_weights") or []
    st.write(t("最终", "final") + f": s = [{', '.join(f'{x:.3f}' for x in w)}], γ = {float(res.get('gamma', float('nan'))):.3f}, "
             + t("得分", "score") + f" = {float(res.get('score', float('nan'))):.3f}")

st.subheader(t("6. 两种用法：作为输入层，或拼接到隐藏层", "6. Two ways to use ELMo: as the input layer, or concatenated to a hidden layer"))
if any(ev.get("input_score") is not None or ev.get("concat_score") is not None for ev in evals.values()):
    st.plotly_chart(ve.usage_figure(evals, TASKS, {
        "baseline_score": t("不用预训练向量", "no pretrained vectors"), "word2vec_score": t("word2vec 作输入", "word2vec as input"),
        "input_score": t("ELMo 作输入", "ELMo as input"), "concat_score": t("ELMo 拼接到隐藏层", "ELMo concatenated to hidden")}),
        width="stretch")
    st.caption(t("同一个小任务模型（自己的词向量 + 双向 LSTM），只改变 ELMo 接入的位置。",
                 "The same small task model (its own word embeddings + a biLSTM); only where ELMo enters changes."))
else:
    st.info(t("评测文件里还没有这两种用法的成绩。", "The eval files do not have these two scores yet.") +
            " `python -m ctxlib eval elmo --task pos`")
widgets.record_time("elmo_layers", _t0)

"""BERT pre-training: fill-mask, one live pre-training example (MLM + NSP), NSP, and ELMo's LMs vs BERT's cloze."""
import time

import streamlit as st

from ctxlib.viz import elmo as ve
from ctxlib.tokens import char_tokens
from ctxlib.app import loaders, state, widgets
from ctxlib.app import i18n
from ctxlib.app.i18n import t
from ctxlib.viz import pretraining as vp

_t0 = time.perf_counter()
widgets.page_header("BERT pre-training", "pretraining.title")
lang = i18n.lang()
st.markdown(t(
    "BERT 用两个任务预训练：**遮蔽语言模型**（随机选 15% 的字：80% 换成 [MASK]，10% 换成随机字，10% 不变，再让模型猜原字——"
    "像带注意力的 CBOW 完形填空）和**下一句预测**（[CLS] A [SEP] B [SEP]：B 是不是 A 的下一句）。"
    "它猜一个字时同时看左右两边；ELMo 的前向、后向语言模型各只看一边。",
    "BERT is pre-trained on two tasks: the **masked LM** (choose 15% of the characters: 80% become [MASK], 10% a random "
    "character, 10% stay; the model must guess the original, a cloze task like CBOW with attention) and **next-sentence "
    "prediction** ([CLS] A [SEP] B [SEP]: does B follow A?). It guesses from both sides at once; ELMo's forward and "
    "backward LMs each see one side."))

enc, err = loaders.try_load("bert")
if enc is None:
    st.warning(widgets.escape_md(t("BERT 模型不可用：", "The BERT model is not available: ") + err))
    st.info(t("构建命令：", "Build it with: ") + "`python -m ctxlib train bert`")
    st.stop()
stamp = loaders.model_stamp("bert")
cap = int(enc.config.get("max_len", 128)) - 2


@st.cache_data(show_spinner=False, max_entries=128)
def fill_mask(masked: str, topk: int, stamp: str) -> list[dict]:
    return loaders.load_encoder("bert").fill_mask(masked, topk=topk)


@st.cache_data(show_spinner=False, max_entries=128)
def nsp(a: str, b: str, stamp: str) -> float:
    return loaders.load_encoder("bert").next_sentence(a, b)


@st.cache_data(show_spinner=False, max_entries=64)
def elmo_words(text: str, stamp: str) -> tuple[list[str], list[tuple[int, int]]]:
    e = loaders.load_encoder("elmo").encode([text])[0]
    return e.tokens, e.spans


@st.cache_data(show_spinner=False, max_entries=128)
def elmo_lm(text: str, index: int, k: int, stamp: str) -> dict:
    return loaders.load_encoder("elmo").lm_topk(text, index, k=k)


@st.cache_resource(show_spinner=False)
def paragraphs(n: int = 3000):
    """A fixed sample of training paragraphs (loading the corpus takes a few seconds, once)."""
    import numpy as np

    from ctxlib import corpus

    ps = corpus.load("corpora", "train")  # the real corpora; supplement sentences would need a "written for ctxlab" label
    idx = np.random.default_rng(0).choice(len(ps), size=min(n, len(ps)), replace=False)
    return [ps[int(i)] for i in sorted(idx)]


for k, p, d in (("pt_text", "text", "今天天气很好，我们去公园散步吧。"), ("pt_ww", "ww", "0"), ("pt_seed", "seed", "0"),
                ("pt_a", "a", "今天下了一场大雨。"), ("pt_b", "b", "路上的行人都打着伞。"),
                ("pt_lm", "lm", "他在银行存了一笔钱。")):
    state.init(k, p, d)
for k in ("pt_ww",):
    if not isinstance(st.session_state[k], bool):
        st.session_state[k] = st.session_state[k] in ("1", "true", "True")

# -- 1. fill-mask ------------------------------------------------------------------------------------
st.subheader(t("1. 完形填空（fill-mask）", "1. Fill the mask"))
text = st.text_input(t("句子：点下面的字把它遮住，或直接写 [MASK]", "Sentence: click characters below to mask them, or write [MASK]"),
                     key="pt_text", max_chars=5000)
whole = st.toggle(t("整词遮蔽（遮住所选字所在的整个词，jieba 分词）", "Whole-word masking (mask every character of the chosen jieba word)"),
                  key="pt_ww")
topk = st.slider(t("候选数 k", "Candidates k"), 3, 10, 5, key="pt_k")
st.query_params.update({"text": text, "ww": "1" if whole else "0"})
if not text.strip():
    st.warning(t("请输入一个句子。", "Please type a sentence."))
else:
    toks = char_tokens(text)
    if len(toks) > cap:
        st.warning(t(f"句子超过模型的最大长度（{cap} 个字），只用前 {cap} 个字。",
                     f"The sentence is longer than the model's maximum length ({cap} characters); only the first {cap} are used."))
        text = text[:toks[cap - 1][2]] if "[MASK]" not in text else text
        toks = toks[:cap]
    originals: list = []
    if "[MASK]" in text:
        masked = text
        originals = [None] * text.count("[MASK]")
    else:
        qp_mask = [int(x) for x in st.query_params.get("mask", "5").split(",") if x.strip().isdigit()]
        chosen = st.pills(t("要遮住的字", "Characters to mask"), list(range(len(toks))), selection_mode="multi",
                          format_func=lambda i: toks[i][0], default=[i for i in qp_mask if i < len(toks)],
                          key=f"pt_pills_{text}")
        st.query_params["mask"] = ",".join(map(str, chosen))
        masked, pairs = vp.mask_text(text, chosen, whole)
        originals = [o for _, o in pairs]
    if "[MASK]" not in masked:
        st.info(t("没有 [MASK]：点上面的字把它遮住，或在句子里写 [MASK]。",
                  "There is no [MASK]: click characters above to mask them, or write [MASK] in the sentence."))
    else:
        st.code(masked, language=None)
        try:
            res = fill_mask(masked, topk, stamp)
            st.plotly_chart(vp.fill_mask_figure(res, originals, t("[MASK] {n}（原字：{orig}）", "[MASK] {n} (original: {orig})")),
                            width="stretch")
            if len(res) > 8:
                st.caption(t(f"只画了前 8 个 [MASK]（共 {len(res)} 个）。", f"Only the first 8 of {len(res)} masks are drawn."))
        except ValueError as e:
            widgets.show_error(str(e))

# -- 2. one pre-training example -------------------------------------------------------------------------
st.subheader(t("2. 现场生成一个预训练样本", "2. One pre-training example, generated live"))
c1, c2, c3 = st.columns([1, 1, 2])
if c1.button(t("换一个样本", "New example"), key="pt_new"):
    st.session_state["pt_seed"] = str(int(st.session_state["pt_seed"]) + 1 if str(st.session_state["pt_seed"]).isdigit() else 0)
seed_s = c2.text_input(t("随机种子", "Seed"), key="pt_seed")
ex_whole = c3.toggle(t("整词遮蔽", "Whole-word masking"), key="pt_ex_ww")
seed = int(seed_s) if seed_s.strip().isdigit() else 0
st.query_params["seed"] = str(seed)
from ctxlib.training.bert_data import make_example  # noqa: E402

with st.spinner(t("读取语料（只在第一次）……", "Loading the corpus (first time only)…")):
    ps = paragraphs()
ex = make_example(seed, enc.tok, ps, whole_word=ex_whole, max_len=min(64, cap + 2))
counts = vp.example_counts(ex)
st.html(vp.example_html(ex, lang))
m1, m2, m3, m4 = st.columns(4)
m1.metric(t("选中", "chosen"), f"{counts['chosen']} / {counts['candidates']} ({counts['chosen'] / max(counts['candidates'], 1):.0%})")
m2.metric("→ [MASK]", counts["mask"])
m3.metric(t("→ 随机字", "→ random"), counts["random"])
m4.metric(t("不变", "kept"), counts["kept"])
st.dataframe([{t("位置", "position"): m["index"], t("原字", "original"): m["original"], t("变成", "became"): m["replacement"],
               t("处理", "kind"): {"mask": "[MASK]", "random": t("随机字", "random"), "kept": t("不变", "kept")}[m["kind"]]}
              for m in ex["masked"]], hide_index=True)
label = t("IsNext（B 真的是下一句）", "IsNext (B really follows A)") if ex["is_next"] else t("NotNext（B 来自另一篇文档）", "NotNext (B comes from another document)")
st.markdown(t("**下一句标签：** ", "**NSP label:** ") + label + t(f"；模型给出 P(IsNext) = {nsp(ex['a_text'], ex['b_text'], stamp):.2f}",
                                                                  f"; the model says P(IsNext) = {nsp(ex['a_text'], ex['b_text'], stamp):.2f}"))
st.caption("A: " + widgets.escape_md(ex["a_text"]) + "  \nB: " + widgets.escape_md(ex["b_text"]))

# -- 3. next-sentence prediction -------------------------------------------------------------------------
st.subheader(t("3. 下一句预测", "3. Next-sentence prediction"))
n1, n2 = st.columns(2)
a = n1.text_input(t("句子 A", "Sentence A"), key="pt_a", max_chars=500)
b = n2.text_input(t("句子 B", "Sentence B"), key="pt_b", max_chars=500)
st.query_params.update({"a": a, "b": b})
if not a.strip() or not b.strip():
    st.warning(t("请输入两个句子。", "Please type both sentences."))
else:
    p_ab, p_ba = nsp(a, b, stamp), nsp(b, a, stamp)
    k1, k2 = st.columns(2)
    k1.metric("P(IsNext | A, B)", f"{p_ab:.2f}")
    k2.metric(t("对照：P(IsNext | B, A)（顺序颠倒）", "control: P(IsNext | B, A) (order swapped)"), f"{p_ba:.2f}")

# -- 4. one-directional vs bidirectional ---------------------------------------------------------------
st.subheader(t("4. 单向还是真正的双向：同一个位置", "4. One-directional vs truly bidirectional: one position"))
lm_text = st.text_input(t("句子", "Sentence"), key="pt_lm", max_chars=500)
st.query_params["lm"] = lm_text
elmo, elmo_err = loaders.try_load("elmo")
if not lm_text.strip():
    st.warning(t("请输入一个句子。", "Please type a sentence."))
elif elmo is None:
    st.info(t("ELMo 模型不可用，无法对比。构建命令：", "The ELMo model is not available for the comparison. Build it with: ")
            + "`python -m ctxlib train elmo`")
else:
    estamp = loaders.model_stamp("elmo")
    w_tokens, w_spans = elmo_words(lm_text, estamp)
    if not w_tokens:
        st.warning(t("这个句子没有词。", "This sentence has no words."))
    else:
        default = min(3, len(w_tokens) - 1)
        pos = st.select_slider(t("位置（ELMo 的词）", "Position (an ELMo word)"), list(range(len(w_tokens))), value=default,
                               format_func=lambda i: f"{i + 1}. {w_tokens[i]}", key=f"pt_lm_pos_{lm_text}")
        lm = elmo_lm(lm_text, pos, topk + 6, estamp)
        s0, s1 = w_spans[pos]
        chars = [i for i, (_, a0, b0) in enumerate(char_tokens(lm_text)) if a0 < s1 and b0 > s0]
        bert_masked, pairs = vp.mask_text(lm_text, chars)
        e1, e2 = st.columns([2, 1])
        left, right = ve.context_label(w_tokens[:pos], "left"), ve.context_label(w_tokens[pos + 1:], "right")
        e1.plotly_chart(ve.lm_bars_figure(ve.drop_specials(lm["forward"], topk), ve.drop_specials(lm["backward"], topk), w_tokens[pos],
                                          (t(f"ELMo 前向 →，只读了「{left}」", f"ELMo forward →, read: {left}"),
                                           t(f"ELMo 后向 ←，只读了「{right}」", f"ELMo backward ←, read: {right}"))),
                        width="stretch")
        try:
            res = fill_mask(bert_masked, topk, stamp)
            e2.plotly_chart(vp.fill_mask_figure(res[:2], [o for _, o in pairs][:2], t("BERT 同时看两边：{orig}", "BERT, both sides: {orig}")),
                            width="stretch")
            e2.code(bert_masked, language=None)
        except ValueError as e:
            e2.warning(str(e))
        st.caption(t("ELMo 在词上预测，BERT 在字上预测（多字词每个字一个 [MASK]，只画前两个）。红色 = 原来的词/字。",
                     "ELMo predicts words, BERT characters (a multi-character word gets one [MASK] per character; the first two are drawn). Red = the original."))
widgets.record_time("bert_pretraining", _t0)

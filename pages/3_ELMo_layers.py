"""ELMo layers and mixing: the 2L+1 vectors of a word, the two LMs, and the task-specific layer weights."""

import time

import streamlit as st

from ctxlib.app import elmo_layers_views, elmo_views, loaders, state, widgets
from ctxlib.app.i18n import msg, prose
from ctxlib.encoder import MAX_CHARS
from ctxlib.viz import elmo as ve
from ctxlib.viz import elmo_flow

_t0 = time.perf_counter()
widgets.page_header("ELMo layers", "elmo.title")
st.markdown(prose("elmo_layers"))

enc, stamp = widgets.require_model("elmo", "ELMo")
TASKS = {"pos": msg("elmo.tasks.pos"), "ner": msg("elmo.tasks.ner"), "sentiment": msg("elmo.tasks.sentiment")}


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
text = c1.text_input(msg("elmo.sentence"), key="elmo_text", max_chars=5000)
word = c2.text_input(msg("elmo.target"), key="elmo_word", max_chars=20).strip()
st.query_params.update({"text": text, "word": word})
if not text.strip():
    st.warning(msg("elmo.no_text"))
    st.stop()
target = word if word and word in text else ""
data = encode(text, target, stamp)
tokens, layers = data["tokens"], data["layers"]
if data["truncated"]:
    st.warning(msg("elmo.truncated", n=MAX_CHARS))
if not tokens:
    st.warning(msg("elmo.no_words"))
    st.stop()
if word and word not in text:
    st.info(msg("elmo.word_missing", word=widgets.escape_md(word)))
pos = st.select_slider(
    msg("elmo.pick"),
    options=list(range(len(tokens))),
    value=tokens.index(word) if word in tokens else 0,
    format_func=lambda i: f"{i + 1}. {tokens[i]}",
    key=f"elmo_pos_{hash((text, word))}",
)
arch = {k: msg(f"elmo.arch.{k}") for k in elmo_flow.ARCH_LABELS}  # "window" stays a template: the figure fills it

st.subheader(msg("elmo.head.flow"))
st.plotly_chart(elmo_flow.architecture_figure(tokens, layers, pos, arch), width="stretch")

st.subheader(msg("elmo.head.vectors", word=widgets.escape_md(tokens[pos])))
names = ve.vector_names(layers.shape[0] - 1, arch)
st.plotly_chart(
    ve.layer_vectors_figure(
        ve.word_vectors(layers, pos),
        names,
        tokens[pos],
        titles=(msg("labels.axis.vectors_title"), msg("labels.axis.cosines_title")),
        dim_label=msg("labels.axis.dim"),
    ),
    width="stretch",
)
elmo_views.nearest_section(layers, widgets.layer_labels(data["names"]), pos, tokens[pos])

st.subheader(msg("elmo.head.lm"))
words_only = st.toggle(msg("elmo.lm.words_only"), value=True, key="elmo_lm_words")
lm = lm_topk(text, pos, target, stamp)
fwd, bwd, left, right = ve.lm_panels(lm, tokens, pos, words_only=words_only)
titles = (msg("elmo.lm.forward", context=left), msg("elmo.lm.backward", context=right))
st.plotly_chart(
    ve.lm_bars_figure(
        fwd,
        bwd,
        tokens[pos],
        titles,
        truth=lm.get("actual"),
        fmt=(msg("pretraining.lm.rank"), msg("pretraining.lm.unknown")),
    ),
    width="stretch",
)
st.caption(msg("elmo.lm.caption"))
st.caption(
    msg(
        "elmo.lm.punct_hidden" if words_only else "elmo.lm.punct_shown",
        fwd=lm["punct"]["forward"],
        bwd=lm["punct"]["backward"],
    )
)

evals, short = elmo_layers_views.weights_section(enc, TASKS)
elmo_layers_views.live_section(enc, short, TASKS)
elmo_layers_views.usage_section(evals, TASKS)
widgets.record_time("elmo_layers", _t0)

"""ELMo layers and mixing: the 2L+1 vectors of a word, the two LMs, and the task-specific layer weights."""
import time

import streamlit as st

from ctxlib import records
from ctxlib.app import elmo_views, loaders, state, widgets
from ctxlib.app.i18n import msg, prose
from ctxlib.app.job_panel import job_panel
from ctxlib.encoder import MAX_CHARS
from ctxlib.evaluation import tasks
from ctxlib.viz import elmo as ve

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
pos = st.select_slider(msg("elmo.pick"), options=list(range(len(tokens))), value=tokens.index(word) if word in tokens else 0,
                       format_func=lambda i: f"{i + 1}. {tokens[i]}", key=f"elmo_pos_{hash((text, word))}")
arch = {k: msg(f"elmo.arch.{k}") for k in ve.ARCH_LABELS}  # "window" stays a template: the figure fills it

st.subheader(msg("elmo.head.flow"))
st.plotly_chart(ve.architecture_figure(tokens, layers, pos, arch), width="stretch")

st.subheader(msg("elmo.head.vectors", word=widgets.escape_md(tokens[pos])))
names = ve.vector_names(layers.shape[0] - 1, arch)
st.plotly_chart(ve.layer_vectors_figure(ve.word_vectors(layers, pos), names, tokens[pos], titles=(msg(
    "labels.axis.vectors_title"), msg("labels.axis.cosines_title")), dim_label=msg("labels.axis.dim")), width="stretch")
elmo_views.nearest_section(layers, widgets.layer_labels(data["names"]), pos, tokens[pos])

st.subheader(msg("elmo.head.lm"))
words_only = st.toggle(msg("elmo.lm.words_only"), value=True, key="elmo_lm_words")
lm = lm_topk(text, pos, target, stamp)
fwd, bwd, left, right = ve.lm_panels(lm, tokens, pos, words_only=words_only)
titles = (msg("elmo.lm.forward", context=left), msg("elmo.lm.backward", context=right))
st.plotly_chart(ve.lm_bars_figure(fwd, bwd, tokens[pos], titles, truth=lm.get("actual"),
                                  fmt=(msg("pretraining.lm.rank"), msg("pretraining.lm.unknown"))), width="stretch")
st.caption(msg("elmo.lm.caption"))
st.caption(msg("elmo.lm.punct_hidden" if words_only else "elmo.lm.punct_shown", fwd=lm["punct"]["forward"],
               bwd=lm["punct"]["backward"]))

st.subheader(msg("elmo.head.weights"))
evals, missing = records.read_evals(enc.path, TASKS)
short = [msg("elmo.weights.token"), *(msg("labels.layer.bilstm", n=j) for j in (1, 2))]
for task in missing:
    st.info(msg("elmo.weights.no_eval", task=TASKS[task], task_id=task))
    widgets.for_teachers([widgets.eval_line("elmo", task)])
if evals:
    st.plotly_chart(ve.mix_weights_figure(evals, short, TASKS, msg("labels.axis.uniform")), width="stretch")
    for col, (task, ev) in zip(st.columns(len(evals)), evals.items()):
        col.plotly_chart(ve.probe_scores_figure(ev, short, {"mix": msg("elmo.weights.mix"), "title": TASKS[task],
                                                    ev.metric: msg(f"labels.metric.{ev.metric}")}),
                         width="stretch", key=f"probe_{task}")
    st.caption(msg("elmo.weights.caption"))

st.subheader(msg("elmo.head.live"))
st.markdown(msg("elmo.live.intro"))
lc1, lc2, lc3 = st.columns([1, 1, 1])
lc1.selectbox(msg("elmo.live.task"), list(TASKS), format_func=TASKS.get, key="elmo_live_task")
lc2.select_slider("λ", options=[0.0, 0.001, 0.01, 0.1, 1.0, 10.0], value=0.0, key="elmo_live_lam")
seconds = lc3.slider(msg("elmo.live.seconds"), 5, 60, 20, key="elmo_live_sec")


mix_plot, mix_kept = elmo_views.mix_views(short, TASKS)
res = job_panel("elmo_mix", "elmo_live", lambda j, **kw: tasks.train_mix_job(j, enc, n_train=200, n_test=200, **kw),
                args=lambda: {"task": st.session_state["elmo_live_task"], "l2": st.session_state["elmo_live_lam"],
                              "max_seconds": st.session_state["elmo_live_sec"]},
                ids="elmo_live", phase_ids="elmo_live.phase", live_view=mix_plot, partial_view=mix_kept,
                expected_s=tasks.mix_expected_s(enc, st.session_state["elmo_live_task"], seconds))
if res:
    st.plotly_chart(ve.mix_history_figure(res.get("history"), short, f"{TASKS.get(res['task'], res['task'])}, λ = {res['l2']}",
                                          msg("labels.axis.step")), width="stretch")
    st.write(msg("elmo.live.final", metric=msg(f"labels.metric.{res.get('metric', 'accuracy')}"), **ve.live_summary(res)))

st.subheader(msg("elmo.head.usage"))
if ve.usage_tasks(evals):
    st.plotly_chart(ve.usage_figure(evals, TASKS, {k: msg(f"elmo.usage.{k}") for k in ve.USAGE_KEYS}), width="stretch")
    st.caption(msg("elmo.usage.caption"))
else:
    st.info(msg("elmo.usage.missing"))
    widgets.for_teachers([widgets.eval_line("elmo", "pos")])
widgets.record_time("elmo_layers", _t0)

"""BERT fine-tuning, live: the [CLS] head on the architecture, a fine-tuning job in the server's job line with
its loss and accuracy per step, the result beside frozen features on the same reviews; then TagLM and CoVe."""
import time

import streamlit as st

from ctxlib import checkpoint, records
from ctxlib.app import loaders, widgets
from ctxlib.app.i18n import lang, msg, prose
from ctxlib.app.job_panel import job_panel
from ctxlib.evaluation import finetune_live as fl
from ctxlib.tokens import char_tokens
from ctxlib.viz import elmo as ve
from ctxlib.viz import transfer
from ctxlib.viz.common import PLOTLY_CONFIG

_t0 = time.perf_counter()
widgets.page_header("BERT fine-tuning", "finetune.title")
st.markdown(prose("finetune_intro"))
bert, _ = widgets.require_model("bert", "BERT")
res = st.session_state.get("ft_result")
labels = lambda area, keys: {k: msg(f"finetune.{area}.{k}") for k in keys}  # noqa: E731

st.subheader(msg("finetune.head.arch"))
examples = res["examples"] if res else []
options = [e[0] for e in examples] or [msg("finetune.arch.example_default")]
pick = options.index(st.selectbox(msg("finetune.arch.example"), options, key=f"ft_example_{bool(examples)}",
                                  disabled=not examples))
text, gold, p_pos = examples[pick] if examples else (msg("finetune.arch.example_text"), None, None)
tokens = ["[CLS]"] + [t for t, _, _ in char_tokens(text)] + ["[SEP]"]
st.plotly_chart(transfer.cls_head_figure(tokens, len(bert.layer_names) - 1, labels("arch", transfer.CLS_LABELS),
                                         None if p_pos is None else (1 - p_pos, p_pos), title=msg("finetune.arch.title")),
                config=PLOTLY_CONFIG)
if examples:
    st.caption(msg("finetune.arch.example_caption", gold=msg("finetune.arch.pos" if gold else "finetune.arch.neg")))

st.subheader(msg("finetune.head.live"))
st.caption(msg("finetune.live.settings", n_train=fl.N_TRAIN, n_test=fl.N_TEST, max_chars=fl.MAX_CHARS, epochs=1,
               batch=fl.BATCH, lr=fl.LR))



def live_plot(job):
    if points := list(job.points):
        fig = loaders.cached_figure(f"ft_live|{job.id}|{len(points)}", lambda: transfer.history_figure(
            points, points[-1]["total"], labels("plot", ("loss", "acc", "mean", "step"))))
        st.plotly_chart(fig, config=PLOTLY_CONFIG, key="ft_live")


elmo, w2v = loaders.try_load("elmo")[0], loaders.try_load("word2vec")[0]
job_panel("finetune", "ft", lambda j: fl.run(j, bert, elmo, w2v, n_train=fl.N_TRAIN, n_test=fl.N_TEST),
          ids="finetune.live", phase_ids="finetune.phase", live_view=live_plot, partial_view=live_plot)

st.subheader(msg("finetune.head.compare"))
if res:
    st.success(msg("finetune.live.done", seconds=res["seconds"], ft_seconds=res["finetune_seconds"], acc=res["accuracy"],
                   cpu_seconds=res["cpu_seconds"], n_test=res["n_test"]))
    st.plotly_chart(transfer.history_figure(res["history"], len(res["history"]), labels("plot", ("loss", "acc", "mean", "step"))),
                    config=PLOTLY_CONFIG, key="ft_history")
    base = res["baselines"]
    rows = [(msg("finetune.plot.finetuned"), res["accuracy"])] + [(msg(f"finetune.plot.{k}"), base[k]) for k in ("bert_cls", "elmo", "word2vec")]
    plot_labels = {**labels("plot", ("accuracy", "majority", "missing")), "title": msg("finetune.plot.title", n=res["n_test"])}
    st.plotly_chart(transfer.comparison_figure(rows, res["majority"], plot_labels), config=PLOTLY_CONFIG, key="ft_compare")
    st.caption(msg("finetune.plot.caption", n_train=res["n_train"], n_test=res["n_test"]))
st.markdown(f"**{msg('finetune.head.full')}**")
evals = {m: records.read_evals(checkpoint.resolve(m), ["sentiment"])[0].get("sentiment") for m in ("bert", "elmo")}
for m in [m for m, ev in evals.items() if ev is None]:
    st.info(msg("finetune.full.missing", model=m))
    widgets.for_teachers([widgets.eval_line(m, "sentiment")])
full = fl.full_size_rows(evals["bert"], evals["elmo"])
if full:
    recipe = fl.finetune_recipe(evals["bert"])

    def method(k):
        if k == "bert_finetuned" and recipe:
            return msg("finetune.full.bert_finetuned_recipe", head=msg(f"finetune.full.head_{recipe['head']}"),
                       epochs=recipe["epochs"])
        return msg(f"finetune.full.{k}")

    st.dataframe({msg("finetune.full.method"): [method(k) for k, _, _ in full],
                  msg("finetune.full.accuracy"): [round(v, 3) for _, v, _ in full]}, hide_index=True,
                 column_config={msg("finetune.full.accuracy"): st.column_config.NumberColumn(format="%.3f")})
    st.caption(msg("finetune.full.caption"))
    widgets.for_teachers([widgets.eval_line(m, "sentiment") for m in evals] + [f"{method(k)}: `{f}`" for k, _, f in full])

st.subheader(msg("finetune.head.taglm"))
st.markdown(prose("taglm"))
st.plotly_chart(transfer.taglm_figure(labels("taglm_fig", transfer.TAGLM_LABELS)), config=PLOTLY_CONFIG)
tasks = {t: msg(f"elmo.tasks.{t}") for t in ("pos", "ner", "sentiment")}
elmo_evals, _ = records.read_evals(checkpoint.resolve("elmo"), tasks)
if ve.usage_tasks(elmo_evals):
    st.markdown(msg("finetune.taglm.measured"))
    st.plotly_chart(ve.usage_figure(elmo_evals, tasks, {k: msg(f"elmo.usage.{k}") for k in ve.USAGE_KEYS}), config=PLOTLY_CONFIG)
else:
    st.info(msg("finetune.taglm.missing"))
    widgets.for_teachers([widgets.eval_line("elmo", "pos")])
st.markdown(f"[{msg('finetune.taglm.link')}](ELMo_layers?lang={lang()})")

st.subheader(msg("finetune.head.cove"))
st.markdown(prose("cove"))
st.plotly_chart(transfer.cove_figure(labels("cove_fig", transfer.COVE_LABELS)), config=PLOTLY_CONFIG)
widgets.record_time("bert_finetuning", _t0)

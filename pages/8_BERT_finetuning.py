"""BERT fine-tuning, live: the [CLS] head on the architecture, a fine-tuning job in the server's job line with
its loss and accuracy per step, the result beside frozen features on the same reviews; then TagLM and CoVe."""

import time

import streamlit as st

from ctxlib import checkpoint, records
from ctxlib.app import finetune_job, widgets
from ctxlib.app.i18n import lang, msg, prose
from ctxlib.evaluation import finetune_live as fl
from ctxlib.tokens import char_tokens
from ctxlib.viz import elmo as ve
from ctxlib.viz import transfer
from ctxlib.viz.common import PLOTLY_CONFIG

_t0 = time.perf_counter()
widgets.page_header("BERT fine-tuning", "finetune.title")
st.markdown(prose("finetune_intro"))
bert, _ = widgets.require_model("bert", "BERT")
res = finetune_job.result()  # this session's last run, started here or in the lesson
labels = lambda area, keys: {k: msg(f"finetune.{area}.{k}") for k in keys}  # noqa: E731

st.subheader(msg("finetune.head.arch"))
examples = res["examples"] if res else []
options = [e[0] for e in examples] or [msg("finetune.arch.example_default")]
pick = options.index(
    st.selectbox(msg("finetune.arch.example"), options, key=f"ft_example_{bool(examples)}", disabled=not examples)
)
text, gold, p_pos = examples[pick] if examples else (msg("finetune.arch.example_text"), None, None)
tokens = ["[CLS]"] + [t for t, _, _ in char_tokens(text)] + ["[SEP]"]
st.plotly_chart(
    transfer.cls_head_figure(
        tokens,
        len(bert.layer_names) - 1,
        labels("arch", transfer.CLS_LABELS),
        None if p_pos is None else (1 - p_pos, p_pos),
        title=msg("finetune.arch.title"),
    ),
    config=PLOTLY_CONFIG,
)
if examples:
    st.caption(msg("finetune.arch.example_caption", gold=msg("finetune.arch.pos" if gold else "finetune.arch.neg")))

st.subheader(msg("finetune.head.live"))
finetune_job.settings_caption()
finetune_job.panel(bert)  # the lesson's fine-tuning step shows the same job (ctxlib.app.finetune_job)

st.subheader(msg("finetune.head.compare"))
if res:
    finetune_job.result_view(res)
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
            return msg(
                "finetune.full.bert_finetuned_recipe",
                head=msg(f"finetune.full.head_{recipe['head']}"),
                epochs=recipe["epochs"],
            )
        return msg(f"finetune.full.{k}")

    st.dataframe(
        {
            msg("finetune.full.method"): [method(k) for k, _, _ in full],
            msg("finetune.full.accuracy"): [round(v, 3) for _, v, _ in full],
        },
        hide_index=True,
        column_config={msg("finetune.full.accuracy"): st.column_config.NumberColumn(format="%.3f")},
    )
    st.caption(msg("finetune.full.caption"))
    widgets.for_teachers(
        [widgets.eval_line(m, "sentiment") for m in evals] + [f"{method(k)}: `{f}`" for k, _, f in full]
    )

st.subheader(msg("finetune.head.taglm"))
st.markdown(prose("taglm"))
st.plotly_chart(transfer.taglm_figure(labels("taglm_fig", transfer.TAGLM_LABELS)), config=PLOTLY_CONFIG)
tasks = {t: msg(f"elmo.tasks.{t}") for t in ("pos", "ner", "sentiment")}
elmo_evals, _ = records.read_evals(checkpoint.resolve("elmo"), tasks)
if ve.usage_tasks(elmo_evals):
    st.markdown(msg("finetune.taglm.measured"))
    st.plotly_chart(
        ve.usage_figure(elmo_evals, tasks, {k: msg(f"elmo.usage.{k}") for k in ve.USAGE_KEYS}), config=PLOTLY_CONFIG
    )
else:
    st.info(msg("finetune.taglm.missing"))
    widgets.for_teachers([widgets.eval_line("elmo", "pos")])
st.markdown(f"[{msg('finetune.taglm.link')}](ELMo_layers?lang={lang()})")

st.subheader(msg("finetune.head.cove"))
st.markdown(prose("cove"))
st.plotly_chart(transfer.cove_figure(labels("cove_fig", transfer.COVE_LABELS)), config=PLOTLY_CONFIG)
widgets.record_time("bert_finetuning", _t0)

"""The lesson page's parts: where the lesson comes from, its error messages, and each view kind's inputs (shown with
the question) and result (shown on reveal). The numbers come from `ctxlib.lesson_compute.compute`; the plots reuse the
pages' builders."""

from __future__ import annotations

import json

import streamlit as st

from ctxlib import checkpoint, lesson, lesson_compute, lesson_facts, triple
from ctxlib.records import sense_tune_of
from ctxlib.viz import attention as va
from ctxlib.viz import elmo as ve
from ctxlib.viz import mechanics as vm
from ctxlib.viz import pretraining as vp
from ctxlib.viz import transfer, transfer_runs
from ctxlib.viz.common import PLOTLY_CONFIG, hbar_panels
from ctxlib.viz.lesson import pair_cosines_figure

from . import lesson_live, loaders, present, state, transformer_views, widgets
from .i18n import escape_md, lang, msg

UPLOAD = "lesson_upload"


def error_text(e: lesson.LessonError) -> str:
    """A LessonError in the session's language."""
    values = {k: msg(f"lesson.type.{v}") if k == "expected" else v for k, v in e.values.items()}
    if "reason_code" in values:  # json's own message is English
        values["reason"] = msg(f"lesson.json.{values['reason_code']}")
    text = msg(f"lesson.error.{e.code}", **values)
    return text if e.step is None else msg("lesson.error.at_step", n=e.step) + text


@st.cache_data(show_spinner=False, max_entries=16)
def _parse(raw: bytes) -> lesson.Lesson:
    return lesson.parse(raw)


def source() -> tuple[lesson.Lesson | None, str, str | None]:
    """(the lesson or None, a key naming it, the error to show). An uploaded file wins over ?lesson=<shipped name>."""
    names = lesson.shipped()
    with st.sidebar.expander(msg("lesson.source.header")):  # the browser refuses files over 1 MB; parse, over MAX_BYTES
        widgets.uploader_style()
        st.caption(msg("teachers.upload.lesson", kb=lesson.MAX_BYTES // 1024))  # the browser refuses over 1 MB
        up = st.file_uploader(
            msg("lesson.source.upload"),
            type=["json"],
            key=UPLOAD,
            max_upload_size=1,
            help=msg("lesson.source.upload_help", max_kb=lesson.MAX_BYTES // 1024),
        )
        st.download_button(
            msg("lesson.source.download"),
            (lesson.LESSON_DIR / "default.json").read_bytes(),
            file_name="default.json",
            mime="application/json",
        )
    if up is not None:
        raw, key = up.getvalue(), f"upload:{up.name}:{up.size}"
        st.query_params.pop("lesson", None)
        st.caption(msg("lesson.source.uploaded", name=escape_md(up.name)))
    else:
        name = state.choice("lesson_name", "lesson", names or ["default"], what=msg("lesson.source.what"))
        if len(names) > 1:
            name = st.sidebar.selectbox(msg("lesson.source.shipped"), names, key="lesson_name")
        st.query_params["lesson"] = name
        try:
            raw = (lesson.LESSON_DIR / f"{name}.json").read_bytes()
        except OSError as e:
            return None, name, msg("lesson.error.unreadable", error=e)
        key = f"shipped:{name}"
        widgets.for_teachers([msg("teachers.lesson_file") + f"`{lesson.LESSON_DIR.name}/{name}.json`"])
    try:
        return _parse(raw), key, None
    except lesson.LessonError as e:
        return None, key, error_text(e)


def missing_models(step: lesson.Step) -> list[str]:
    """The step's models that do not load, each named with its build command (cosine steps show the others)."""
    out = []
    if lesson.ENGLISH in step.models() and not lesson_compute.english_models(loaders.load_encoder):
        out.append(lesson.ENGLISH)
        st.warning(msg("lesson.no_english_model"))
    for m in (m for m in step.models() if m != lesson.ENGLISH):
        if loaders.try_load(m)[1] is not None:
            out.append(m)
            st.warning(msg("common.model_unavailable", model=m) + f"`{checkpoint.rebuild_command(m)}`")
    return out


@st.cache_resource(show_spinner=False)
def _paragraphs():
    return vp.training_sample()


@st.cache_data(show_spinner=False, max_entries=64)
def _compute(kind: str, params: str, stamps: str) -> dict:
    step = lesson.Step(kind, {}, {}, {}, None, json.loads(params))
    return lesson_compute.compute(step, loaders.load_encoder, _paragraphs)


def compute(step: lesson.Step) -> dict:
    """The step's view data, cached by its kind, parameters and the checkpoints it reads."""
    stamps = ",".join(loaders.model_stamp(m) for m in step.models())
    return _compute(step.kind, json.dumps(step.params, ensure_ascii=False, sort_keys=True), stamps)


def answer(step: lesson.Step, data: dict | None) -> str:
    """The step's answer in the session's language, its placeholders filled from the model's output (Markdown)."""
    words = {k: msg(f"lesson.fact.{k}") for k in lesson_facts.WORDS}
    return lesson.answer(step, data, lang(), words, escape=escape_md)


# -- presentation mode: the charts fit the screen --------------------------------------------------------------
SCREEN_H = 1080  # px, a projector's height, until the browser has said its own (present.keyboard)
ABOVE = 300  # px above the result column: the page title, the navigation row, the step's title
BESIDE = {"fill_mask": 110, "taglm": 110, "mlm_example": 300, "positions": 160, "unseen_word": 260}  # px of text
CHARTS = {"taglm": 2}  # views that draw more than one chart, one under the other


def chart_room(step: lesson.Step, screen_h: int | None) -> int | None:
    """The tallest a chart of this step may be in presentation mode so that the result column fits the screen
    without scrolling (None outside presentation mode): the screen less what stands above and the view's text
    (captions, rank lines, an estimate per view kind), shared among its charts; never under 220 px."""
    if not present.is_on():
        return None
    room = (screen_h or SCREEN_H) - ABOVE - BESIDE.get(step.kind, 70)
    return max(220, room // (lesson_live.charts(step) or CHARTS.get(step.kind, 1)))


# -- what students see with the question ------------------------------------------------------------------------
def inputs(step: lesson.Step) -> None:
    p = step.params
    if step.kind == "cosine":
        st.markdown("\n".join(f"{i + 1}. {escape_md(s)}" for i, s in enumerate(p["sentences"])))
    elif step.kind in ("fill_mask", "elmo_lm", "attention", "positions"):
        st.code(p["text"], language=None)
        if step.kind == "fill_mask" and vp.mask_at_end(p["text"]):
            st.caption(msg("pretraining.mask.at_end"))
    elif step.kind == "nsp":
        st.markdown(f"**A:** {escape_md(p['a'])}  \n**B:** {escape_md(p['b'])}")
    elif step.kind == "next_char":
        st.code(p["prompt"] + " …", language=None)
    elif step.kind == "unseen_word":
        st.code(p["sentence"], language=None)
    if step.kind in ("cosine", "fill_mask", "elmo_lm", "attention", "nsp", "next_char", "unseen_word", "positions"):
        st.caption(msg("lesson.written"))


# -- what the reveal shows ---------------------------------------------------------------------------------------
def result(step: lesson.Step, d: dict) -> None:
    p = step.params
    getattr(_Views, step.kind)(p, d)


def _sense_tuned(model: str) -> bool:
    """Whether a loaded model was sense-tuned (ctxlib.training.sense_tune) after pre-training."""
    try:
        return sense_tune_of(loaders.load_encoder(model).summary) is not None
    except Exception:  # noqa: BLE001 - a model that does not load has no rows here anyway
        return False


class _Views:
    @staticmethod
    def cosine(p, d):
        for m in d["oov"]:
            st.warning(msg("lesson.view.oov", model=m, word=escape_md(p["word"])))
        for m, err in d["failed"]:
            st.warning(msg("common.model_unavailable", model=m) + escape_md(err))
        if d["rows"]:
            rows = [((m, widgets.layer_label(name)), cs) for m, name, cs in d["rows"]]
            pairs = [msg("lesson.view.pair", j=j) for j in range(2, len(p["sentences"]) + 1)]
            st.plotly_chart(
                pair_cosines_figure(rows, pairs, msg("lesson.view.cos_title", word=p["word"])),
                config=PLOTLY_CONFIG,
                key="lesson_chart_cos",
            )
            tuned = [m for m in dict.fromkeys(m for m, _, _ in d["rows"]) if _sense_tuned(m)]
            if tuned and p["word"] in triple.supplement_words():  # as on the home page: trained material, said so
                st.caption(
                    msg(
                        "lesson.view.sense_tuned_word",
                        models=" / ".join(tuned),
                        word=escape_md(p["word"]),
                        others="、".join(triple.frozen_words()[:5]),
                    )
                )

    @staticmethod
    def fill_mask(p, d):
        ans = d["answer"]
        fig = vp.fill_mask_figure(d["masks"], [a["char"] for a in ans], msg("pretraining.mask.panel"))
        st.plotly_chart(fig, config=PLOTLY_CONFIG, key="lesson_chart_mask")
        for k, a in enumerate(ans):
            if a["char"] and a["rank"]:
                st.markdown(msg("lesson.view.rank", n=k + 1, char=escape_md(a["char"]), rank=a["rank"], p=a["prob"]))
            elif a["char"]:
                st.markdown(msg("lesson.view.no_rank", n=k + 1, char=escape_md(a["char"])))

    @staticmethod
    def elmo_lm(p, d):
        fwd, bwd, left, right = ve.lm_panels(d, d["tokens"], d["index"], k=5)
        titles = (msg("elmo.lm.forward", context=left), msg("elmo.lm.backward", context=right))
        fmt = (msg("pretraining.lm.rank"), msg("pretraining.lm.unknown"))  # the true word, ranked, as on the ELMo page
        st.plotly_chart(
            ve.lm_bars_figure(fwd, bwd, d["tokens"][d["index"]], titles, truth=d.get("actual"), fmt=fmt),
            config=PLOTLY_CONFIG,
            key="lesson_chart_lm",
        )
        st.caption(msg("elmo.lm.caption"))

    @staticmethod
    def elmo_mix(p, d):
        tasks = {t: msg(f"elmo.tasks.{t}") for t in ("pos", "ner", "sentiment")}
        for t in d["missing"]:
            st.info(msg("elmo.weights.no_eval", task=tasks[t], task_id=t))
            widgets.for_teachers([widgets.eval_line("elmo", t)])
        if d["evals"]:
            short = [msg("elmo.weights.token")] + [f"biLSTM {j}" for j in range(1, d["n_layers"])]
            st.plotly_chart(
                ve.mix_weights_figure(d["evals"], short, tasks, msg("labels.axis.uniform")),
                config=PLOTLY_CONFIG,
                key="lesson_chart_mix",
            )
            st.caption(msg("lesson.view.mix_source"))

    @staticmethod
    def mlm_example(p, d):
        ex = d["example"]
        labels = {k: msg(f"pretraining.example.{k}") for k in vp.EXAMPLE_LABELS}
        st.html(vp.example_html(ex, (labels["legend_mask"], labels["legend_random"], labels["legend_kept"])))
        for col, (label, value) in zip(st.columns(4), vp.example_metrics(ex, labels)):
            col.metric(label, value)
        label = msg("pretraining.example.is_next") if ex["is_next"] else msg("pretraining.example.not_next")
        st.markdown(msg("pretraining.example.nsp", label=label, p=d["p_next"]))
        st.caption(msg("lesson.view.corpus"))
        start = int(p.get("seed", 0))
        st.caption(
            msg("lesson.view.example_seed", start=start, seed=d["seed"])
            if d["found"]
            else msg("lesson.view.example_not_found", start=start, end=start + lesson_compute.EXAMPLE_SEARCH)
        )

    @staticmethod
    def nsp(p, d):
        k1, k2 = st.columns(2)
        k1.metric("P(IsNext | A, B)", f"{d['ab']:.2f}")
        k2.metric(msg("pretraining.nsp.control"), f"{d['ba']:.2f}")

    @staticmethod
    def attention(p, d):
        ax = va.AxisLabels(*(msg(f"labels.attention.{k}") for k in va.AxisLabels._fields))
        title = msg("lesson.view.head", model=d["model"].upper(), layer=d["layer"], head=d["head"])
        st.plotly_chart(
            va.attention_heatmap(
                d["att"],
                d["tokens"],
                title,
                causal=d["model"] == "gpt",
                masked_label=msg("attention.gpt.masked"),
                labels=ax,
            ),
            config=PLOTLY_CONFIG,
            key="lesson_chart_att",
        )

    @staticmethod
    def next_char(p, d):
        fig = hbar_panels([(msg("lesson.view.next_char", prompt=p["prompt"]), d["candidates"], "#2ca02c")], per_row=1)
        st.plotly_chart(fig, config=PLOTLY_CONFIG, key="lesson_chart_next")

    @staticmethod
    def unseen_word(p, d):
        if d["w2v_error"]:
            st.error("OutOfVocabulary: " + msg("errors.oov", word=escape_md(p["word"]), model="word2vec"))
        else:
            st.info(msg("lesson.view.unseen_w2v_ok", word=escape_md(p["word"])))
        st.markdown(
            msg(
                "lesson.view.unseen_elmo_vec",
                word=escape_md(p["word"]),
                dim=d["dim"],
                values=", ".join(f"{x:+.2f}" for x in d["vector"]),
            )
        )
        st.table(
            {
                msg("lesson.view.unseen_layer"): widgets.layer_labels(d["layer_names"]),
                msg("lesson.view.unseen_nearest"): ["  ".join(f"{w} {c:.2f}" for w, c in row) for row in d["nearest"]],
            }
        )
        st.caption(msg("lesson.view.unseen_caption"))

    @staticmethod
    def taglm(p, d):
        st.plotly_chart(
            transfer.taglm_figure({k: msg(f"finetune.taglm_fig.{k}") for k in transfer.TAGLM_LABELS}),
            config=PLOTLY_CONFIG,
            key="lesson_chart_taglm",
        )
        st.caption(msg("lesson.view.taglm_caption"))
        tasks = {t: msg(f"elmo.tasks.{t}") for t in lesson_facts.TASKS}
        for t in d["missing"]:
            st.info(msg("elmo.weights.no_eval", task=tasks[t], task_id=t))
            widgets.for_teachers([widgets.eval_line("elmo", t)])
        if ve.usage_tasks(d["elmo_evals"]):
            st.plotly_chart(
                ve.usage_figure(d["elmo_evals"], tasks, {k: msg(f"elmo.usage.{k}") for k in ve.USAGE_KEYS}),
                config=PLOTLY_CONFIG,
                key="lesson_chart_usage",
            )
            st.caption(msg("lesson.view.usage_caption"))

    @staticmethod
    def cove(p, d):
        st.plotly_chart(
            transfer.cove_figure({k: msg(f"finetune.cove_fig.{k}") for k in transfer.COVE_LABELS}),
            config=PLOTLY_CONFIG,
            key="lesson_chart_cove",
        )
        st.caption(msg("lesson.view.cove_caption"))

    @staticmethod
    def finetune(p, d):
        r = d["recipe"]
        head = msg(f"finetune.full.head_{r['head']}") if r else ""
        if d["full"]:
            name = lambda k: (
                msg("finetune.full.bert_finetuned_recipe", head=head, epochs=r["epochs"])
                if k == "bert_finetuned" and r
                else msg(f"finetune.full.{k}")
            )
            rows = [
                (name(k), v)
                for k, v, _ in d["full"]
                if k in ("bert_finetuned", "bert_input", "elmo_input", "w2v_input")
            ]
            labels = {k: msg(f"finetune.plot.{k}") for k in ("accuracy", "majority", "missing")}
            st.plotly_chart(
                transfer_runs.comparison_figure(rows, None, {**labels, "title": msg("finetune.head.full")}),
                config=PLOTLY_CONFIG,
                key="lesson_chart_ft",
            )
        else:
            st.info(msg("finetune.full.missing", model="bert"))
            widgets.for_teachers([widgets.eval_line("bert", "sentiment")])
        if r:
            st.caption(
                msg(
                    "lesson.view.finetune_recipe",
                    head=head,
                    epochs=r["epochs"],
                    lr=r.get("lr", "?"),
                    batch=r.get("batch", "?"),
                )
            )
        st.caption(msg("lesson.view.finetune_caption"))
        st.markdown(f"[{msg('lesson.view.finetune_link')}](BERT_finetuning?lang={lang()})")

    @staticmethod
    def positions(p, d):
        st.markdown(msg(f"mechanics.scheme.{d['scheme']}", model=d["model"].upper()))
        st.markdown(transformer_views.repeated_char_note(d))
        rows = [f"{d['char']} @{i}" for i in d["positions"]]
        labels = vm.Labels(*(msg(f"mechanics.labels.{k}") for k in vm.Labels._fields))
        st.plotly_chart(
            vm.token_matrix(d["layer0"], rows, msg("mechanics.fig.layer0"), labels, height=220),
            config=PLOTLY_CONFIG,
            key="lesson_chart_positions",
        )

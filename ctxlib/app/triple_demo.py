"""The home page's live demo: one word in three sentences (A and B in one sense, C in another), and per model and
layer whether the same-sense pair is closer, beside the held-out pair ranking. The numbers are `ctxlib.triple`'s."""

from __future__ import annotations

import streamlit as st

from ctxlib import checkpoint, triple
from ctxlib.encoder import WordNotFound
from ctxlib.examples import Numbers
from ctxlib.records import sense_tune_of
from ctxlib.tokens import find_all
from ctxlib.viz.common import PLOTLY_CONFIG
from ctxlib.viz.margin import margin_chart

from . import demo_notes, loaders, state, vocab_notes, widgets
from .i18n import escape_md, msg

# Measured with the shipped checkpoints (triple.margins, triple.example_noise; the chart shows it live): BERT puts A
# closer to B beyond its noise band (+0.475 at layer 4, band ±0.210); ELMo (+0.041 at biLSTM 1, ±0.145) and GPT
# (+0.085 at layer 3, ±0.224) stay inside theirs: "no clear answer". C is flagged: jieba alone keeps 苹果公司 whole.
DEFAULTS = {"word": "苹果", "a": "我每天吃一个苹果", "b": "这个苹果又甜又脆", "c": "苹果公司发布了新手机"}
# For registered English models (written for ctxlab, from ctxlib/examples_en.py's "bank" set: A and B money, C river).
DEFAULTS_EN = {
    "word": "bank",
    "a": "she opened a savings account at the bank last week",
    "b": "the bank raised its interest rates again this year",
    "c": "we had a picnic on the grassy bank of the river",
}
MAX_SENTENCE = 300


@st.cache_data(show_spinner=False, max_entries=16)
def heldout(model: str, stamp: str) -> tuple[dict, bool]:
    """({View: held-out pair ranking}, read from the eval file?) of a loaded model. A stored eval_senses.json gives
    whole layers only; ELMo's halves need its vectors, so ELMo is always measured here."""
    enc = loaders.load_encoder(model)
    path = getattr(enc, "path", None)
    if loaders.is_registered(model):  # an outside model's figures live beside the others', never in its own folder
        from ctxlib.registered import eval_dir

        path = eval_dir(model)
    if enc.kind != "elmo" and path is not None:
        stored = triple.stored_ranking(path / "eval_senses.json", list(enc.layer_names))
        if stored is not None:
            return stored, True
    return triple.heldout_ranking(enc, "english" if getattr(enc, "language", "zh") == "en" else "frozen"), False


def view_label(names: list[str], v: triple.View) -> str:
    name = widgets.layer_label(names[v.layer])
    return name if v.half is None else f"{name} · {msg(f'triple.half.{v.half}')}"


def demo_language() -> str:
    """ "zh", or "en" when the teacher switches the demo to English sentences: the switch shows only where a registered
    English model loads (the shipped models read Chinese). A switch starts the word and sentences afresh."""
    english = [m for m in loaders.model_order() if getattr(loaders.try_load(m)[0], "language", "zh") == "en"]
    if not english:
        return "zh"
    names = {"zh": msg("home_demo.lang_zh"), "en": msg("home_demo.lang_en", models=", ".join(english))}
    code = st.radio(
        msg("home_demo.lang"),
        list(names),
        format_func=names.__getitem__,
        horizontal=True,
        index=int(st.query_params.get("tl") == "en"),
        key="home_tl",
    )
    if st.session_state.get("home_tl_was", code) != code:
        for k in ("word", "a", "b", "c"):
            st.session_state.pop(f"home_{'word' if k == 'word' else k}", None)
            st.session_state.pop(f"home_{'word' if k == 'word' else k}_w", None)
            st.query_params.pop(k, None)
    st.session_state["home_tl_was"] = code
    st.query_params["tl"] = code
    return code


def _inputs(defaults: dict):
    """(word, A, B, C, the sentences' three columns)."""
    word = st.text_input(
        msg("home.demo.word"),
        value=state.init("home_word", "word", defaults["word"], max_chars=20),
        key="home_word_w",
        max_chars=20,
    )
    cols = st.columns(3)
    s = [
        col.text_input(
            msg(f"triple.sentence_{k}"),
            key=f"home_{k}_w",
            max_chars=MAX_SENTENCE,
            value=state.init(f"home_{k}", k, defaults[k], max_chars=MAX_SENTENCE),
        )
        for col, k in zip(cols, "abc")
    ]
    st.query_params.update({"word": word, "a": s[0], "b": s[1], "c": s[2]})
    return word, *s, cols


def _context_notes(word: str, texts: tuple[str, str, str], kinds: set[str]) -> list[str]:
    """Info boxes where two sentences share the context on one side; returns the note on sentences the word opens
    (for the expander)."""
    if not kinds & {"elmo", "gpt"}:
        return []
    for x, y in ("AB", "AC", "BC"):
        left, right = triple.shared_context(texts["ABC".index(x)], texts["ABC".index(y)], word)
        if left:
            st.info(escape_md(msg("triple.shared_left", first=x, second=y, word=word)))
        if right and "elmo" in kinds:
            st.info(escape_md(msg("triple.shared_right", first=x, second=y, word=word)))
    opens = [k for k, s in zip("ABC", texts) if find_all(s, word)[0][0] == 0]
    return [escape_md(msg("triple.opens", sentences=Numbers(tuple(opens))))] if opens else []


class _Found:
    """What the models gave for the demo's word: chart rows, verdict lines and what the notes under the chart need."""

    def __init__(self):
        self.rows, self.lines, self.stored, self.word_models = [], [], [], []
        self.found, self.tuned, self.kinds = {}, {}, set()


def _measure(res: _Found, m: str, enc, word: str, texts) -> None:
    """One loaded model's margins for the three sentences, with its held-out ranking and noise band, into `res`;
    a model without the word, or one that fails, gets a note instead."""
    stamp = loaders.model_stamp(m)
    res.found[m] = vocab_notes.status(m, word, stamp)
    if res.found[m].status == "missing":
        return
    try:
        d = loaders.word_tokens(m, word, texts, stamp)
    except WordNotFound:
        st.warning(escape_md(msg("triple.input.too_long", model=m)))
        return
    except Exception as e:  # one broken model must not hide the others
        st.warning(escape_md(msg("common.model_failed", model=m, error=e)))
        return
    with loaders.busy(msg("triple.computing", model=m), ("heldout", m, stamp)):
        ranks, from_file = heldout(m, stamp)
    with loaders.busy(msg("home_demo.computing_noise", model=m), ("noise", m, stamp)):
        bands = demo_notes.noise(m, stamp)
    res.stored += [m] if from_file else []
    res.word_models += [m] if enc.word_level else []
    res.kinds.add(enc.kind)
    if (t := sense_tune_of(enc.summary)) is not None:
        res.tuned[m] = t
    new = triple.margins(d.vecs, enc.kind)
    res.rows += [
        {
            "model": m,
            "label": view_label(d.layer_names, r.view),
            "margin": r.margin,
            "cos_ab": r.cos_ab,
            "cos_ac": r.cos_ac,
            "rank": ranks.get(r.view),
            "band": bands.get(r.view),
        }
        for r in new
    ]
    res.lines += demo_notes.verdict_lines(m, new, bands, lambda v, names=d.layer_names: view_label(names, v))


def _chart_notes(res: _Found, word: str, opens: list[str]) -> list[str]:
    """The notes under the chart: the sense set, what each kind of model shows, sense-tuned models, stored rankings."""
    n_words, n_sents = triple.sense_set_size()
    notes = [msg("triple.caption", words=n_words, sentences=n_sents), *opens]
    notes += [
        msg({"word2vec": "triple.caption_w2v", "elmo": "triple.caption_halves", "gpt": "triple.caption_gpt"}[k])
        for k in ("word2vec", "elmo", "gpt")
        if k in res.kinds
    ]
    for m, t in res.tuned.items():  # a model trained with sense labels says so, and whether this word was among them
        notes.append(
            msg("triple.sense_tuned", model=m, steps=t.get("config", {}).get("steps", "?"), words=t.get("words", "?"))
        )
    if res.tuned and word in triple.supplement_words():
        notes.append(
            msg(
                "triple.sense_tuned_word",
                model=" / ".join(res.tuned),
                word=escape_md(word),
                others="、".join(triple.frozen_words()[:5]),
            )
        )
    if res.stored:
        notes.append(msg("triple.ranking_file", models=", ".join(res.stored)))
    return notes


def section() -> dict[str, str | None]:
    """Draw the demo; returns {model: None if loaded else the load error} for the page's model table."""
    heading = st.empty()  # names the word typed below (drawn first, filled once the inputs are read)
    st.markdown(msg("triple.intro"))
    tl = demo_language()
    defaults = DEFAULTS_EN if tl == "en" else DEFAULTS
    word, *raw, cols = _inputs(defaults)
    shown = word.strip() if word and word.strip() else defaults["word"]
    heading.header(msg("triple.header", word=escape_md(shown[:12])))
    word, texts, notes = triple.check_triple(word, *raw)
    for note in notes:
        getattr(st, note.level if note.level != "error" else "warning")(escape_md(msg(note.id, **note.values)))
    blocked = any(n.level == "error" for n in notes)
    status, res = {}, _Found()
    chart, notice, verdicts = st.empty(), st.container(), st.container()
    for m in loaders.model_order():  # model by model, each with its spinner while it loads
        with loaders.busy(msg("home.demo.loading", model=m), needed=m not in loaders.LOADED):
            enc, status[m] = loaders.try_load(m)
        if enc is None or blocked or getattr(enc, "language", "zh") != tl:  # each model reads its own language
            continue
        _measure(res, m, enc, word, texts)
    rows = res.rows
    if res.lines:  # one element, not one per model: each element is a message the server queues and sends
        verdicts.markdown("\n".join(res.lines))
    if rows:  # drawn once, when every model is in (a figure per model meant building and sending it four times)
        chart.plotly_chart(
            loaders.cached_figure(
                f"margin|{word}|{rows}",
                lambda: margin_chart(
                    rows,
                    title=msg("triple.chart_title", word=word),
                    margin_title=msg("triple.margin_axis"),
                    rank_title=msg("triple.rank_axis"),
                    chance_text=msg("triple.chance"),
                    band_text=msg("home_demo.band_legend", share=triple.NOISE_Q),
                ),
            ),
            config=PLOTLY_CONFIG,
        )
        with notice:
            demo_notes.notice()
    if not any(err is None for err in status.values()):
        st.warning(msg("home.demo.no_model", command=checkpoint.rebuild_command("word2vec")))
    if blocked:
        return status
    demo_notes.split_notes(cols, word, texts, res.word_models)
    vocab_notes.show(res.found, word)
    opens = _context_notes(word, texts, res.kinds)
    if rows:  # the notes under the chart, in one expander
        demo_notes.how_to_read(_chart_notes(res, word, opens), banded=any(r["band"] is not None for r in rows))
    return status


@st.fragment
def fragment() -> None:
    """`section()` as a fragment: editing the demo's word or sentences reruns the demo, not the whole home page."""
    section()

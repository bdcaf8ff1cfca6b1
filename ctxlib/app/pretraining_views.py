"""Parts of the BERT pre-training page (pages/5_BERT_pretraining.py): the fill-mask answer, next sentence prediction
(Devlin et al. 2019) and one position four ways (ELMo forward, ELMo backward, GPT, BERT). `ask(model, method, stamp,
*args)` is the page's cached call of a model's method."""

import streamlit as st

from ctxlib.app import explain, loaders, results_view, text_fit, widgets
from ctxlib.app.i18n import msg
from ctxlib.viz import pretraining as vp


def fill_mask_answer(masked: str, originals, topk: int, stamp: str, ask) -> None:
    """The masked input, BERT's top-k for each [MASK] (and the original token's rank), or the error in words."""
    st.code(masked, language=None)
    if vp.mask_at_end(masked):
        st.caption(msg("pretraining.mask.at_end"))
    try:
        res = ask("bert", "fill_mask", stamp, masked, topk=topk, originals=originals)
        text_fit.model_note("bert", stamp)
        st.plotly_chart(
            vp.fill_mask_figure(
                res, originals, msg("pretraining.mask.panel"), msg("pretraining.lm.rank"), msg("pretraining.lm.unknown")
            ),
            width="stretch",
        )
        if len(res) > 8:
            st.caption(msg("pretraining.mask.first_8", n=len(res)))
        text_fit.outside_fill_mask(masked, topk, originals, ask)
    except ValueError as e:
        widgets.show_error(explain.error_text(e))


def nsp_section(enc, stamp: str, ask) -> None:
    """P(IsNext) of two typed sentences, the swapped pair as a control, and the measured NSP table."""
    st.subheader(msg("pretraining.nsp.header"))
    a, b = (
        col.text_input(msg(f"pretraining.nsp.{k}"), key=f"pt_{k}", max_chars=500) for col, k in zip(st.columns(2), "ab")
    )
    st.query_params.update({"a": a, "b": b})
    if not a.strip() or not b.strip():
        st.warning(msg("pretraining.nsp.empty"))
    else:
        k1, k2 = st.columns(2)
        p_ab, p_ba = ask("bert", "next_sentence", stamp, a, b), ask("bert", "next_sentence", stamp, b, a)
        k1.metric("P(IsNext | A, B)", f"{p_ab:.2f}")
        k2.metric(msg("pretraining.nsp.control"), f"{p_ba:.2f}")
        st.caption(results_view.nsp_live_note(p_ab, p_ba))
    results_view.nsp_table_section(enc.path, "python -m ctxlib eval bert --task nsp")  # measured: topic, not order


def one_position_section(topk: int, ask) -> None:
    """One word position of a sentence predicted by each loaded model, each from the context it may see."""
    st.subheader(msg("pretraining.lm.header"))
    lm_text = st.text_input(msg("pretraining.lm.sentence"), key="pt_lm", max_chars=500)
    st.query_params["lm"] = lm_text
    have = {m: loaders.try_load(m)[0] is not None for m in vp.POSITION_MODELS}  # BERT is loaded (see the page)
    stamps = {m: loaders.model_stamp(m) for m in have}
    for m in (m for m in have if not have[m]):  # the others still show
        widgets.missing_model_note("pretraining.lm.missing", m, model=vp.MODEL_NAMES[m])
    elmo_words = ask("elmo", "encode", stamps["elmo"], [lm_text])[0] if have["elmo"] and lm_text.strip() else None
    w_tokens, spans = (elmo_words.tokens, elmo_words.spans) if elmo_words else vp.word_spans(lm_text)
    if not lm_text.strip():
        st.warning(msg("pretraining.empty"))
        return
    if not w_tokens:
        st.warning(msg("pretraining.lm.no_words"))
        return
    pos = st.select_slider(
        msg("pretraining.lm.position"),
        list(range(len(w_tokens))),
        value=min(3, len(w_tokens) - 1),
        format_func=lambda i: f"{i + 1}. {w_tokens[i]}",
        key=f"pt_lm_pos_{lm_text}",
    )
    titles = {k: msg(f"pretraining.lm.{k}") for k in vp.POSITION_TITLES}
    gpt_cap = loaders.load_encoder("gpt").max_len - 1 if have["gpt"] else 10**6
    words_only = st.toggle(msg("pretraining.lm.words_only"), value=True, key="pt_lm_words", disabled=not have["elmo"])
    ask_m = lambda m, f, *a, **kw: ask(m, f, stamps[m], *a, **kw)  # each model with its own stamp
    panels, actual, punct = vp.one_position(
        lm_text, w_tokens, spans, pos, topk, ask_m, have, titles, gpt_cap, words_only=words_only
    )
    st.plotly_chart(vp.one_position_figure(panels, actual), width="stretch")
    st.caption(msg("pretraining.lm.caption"))
    if punct:
        st.caption(
            msg(
                "elmo.lm.punct_hidden" if words_only else "elmo.lm.punct_shown",
                fwd=punct["forward"],
                bwd=punct["backward"],
            )
        )

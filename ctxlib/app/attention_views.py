"""The four tabs of the attention page (pages/4_BERT_attention.py): the model view (every layer x head, click one to
enlarge), the head view (lines, after BertViz), head summaries (Clark et al. 2019) and one word across the layers."""

import streamlit as st

from ctxlib.app import widgets
from ctxlib.app.i18n import msg
from ctxlib.viz import attention as va
from ctxlib.viz import attention_stats as stats
from ctxlib.viz import head_view as hv


def model_tab(att, tokens, gpt: bool, ax) -> None:
    """All layers x heads as small heatmaps; the clicked (or typed) layer and head shown large, kept in ?sel=."""
    masked, cant_look = msg("attention.gpt.masked"), msg("attention.gpt.masked_caption")
    n_layers, n_heads = att.shape[:2]
    st.caption(msg("attention.model.caption") + (" " + cant_look if gpt else ""))
    if "att_sel" not in st.session_state:  # shareable: ?sel=layer,head
        st.session_state["att_sel"] = va.parse_selection(st.query_params.get("sel", ""), (n_layers, 1))
    sel = va.clamp_selection(st.session_state["att_sel"], n_layers, n_heads)
    ev = st.plotly_chart(
        va.model_view(att, tokens, sel, causal=gpt, labels=ax),
        on_select="rerun",
        selection_mode="points",
        key="att_model_view",
        width="stretch",
    )
    click = va.clicked_head(ev)
    if click and click != st.session_state.get("att_click"):  # a new click (not the stale selection of an old one)
        st.session_state.update(att_click=click, att_sel=click)
        st.rerun()
    m1, m2 = st.columns(2)
    layer_sel = m1.number_input(msg("attention.model.layer"), 1, n_layers, sel[0], key=f"att_l_{sel}")
    head_sel = m2.number_input(msg("attention.model.head"), 1, n_heads, sel[1], key=f"att_h_{sel}")
    st.session_state["att_sel"] = (int(layer_sel), int(head_sel))
    st.query_params["sel"] = f"{int(layer_sel)},{int(head_sel)}"
    title = msg("attention.model.title", layer=layer_sel, head=head_sel)
    fig = va.attention_heatmap(
        att[layer_sel - 1, head_sel - 1], tokens, title, causal=gpt, masked_label=masked, labels=ax
    )
    st.plotly_chart(fig, width="stretch", key="att_big")


def head_tab(att, tokens, seg, gpt: bool, ax) -> None:
    """One layer's chosen heads as lines between tokens, next to the heatmap of their mean."""
    masked, cant_look = msg("attention.gpt.masked"), msg("attention.gpt.masked_caption")
    n_layers, n_heads = att.shape[:2]
    h1, h2, h3 = st.columns([1, 2, 1])
    layer = h1.selectbox(msg("attention.head.layer"), list(range(1, n_layers + 1)), index=0, key="att_hv_layer")
    heads = h2.multiselect(
        msg("attention.head.heads"),
        list(range(1, n_heads + 1)),
        default=list(range(1, n_heads + 1)),
        key="att_hv_heads",
    )
    thr = h3.slider(msg("attention.head.threshold"), 0.0, 0.3, 0.05, 0.01, key="att_hv_thr")
    labels = hv.HeadViewLabels(*(msg(f"attention.head.{k}") for k in hv.HeadViewLabels._fields))
    c_lines, c_heat = st.columns([1, 1])
    c_lines.iframe(
        hv.head_view_html(
            att[layer - 1], tokens, [h - 1 for h in heads], threshold=thr, segment_ids=seg, labels=labels
        ),
        height=hv.head_view_height(len(tokens)),
    )  # all escaped, all inline
    title = msg("attention.head.mean_title", layer=layer)
    fig = va.attention_heatmap(
        stats.mean_heads(att[layer - 1], heads), tokens, title, causal=gpt, masked_label=masked, labels=ax
    )
    c_heat.plotly_chart(fig, width="stretch", key="att_hv_heat")
    if gpt:
        c_heat.caption(cant_look)


def summary_tab(rows, n_layers: int, n_heads: int, gpt: bool, hide: bool, ax) -> None:
    """One measure per head (entropy, attention to [CLS] / [SEP] / the next token, ...) as a grid and a table."""
    metric_names = {k: msg(f"attention.summary.metrics.{k}") for k in stats.metrics_for(gpt)}
    metric = st.radio(
        msg("attention.summary.metric"),
        list(metric_names),
        format_func=metric_names.get,
        horizontal=True,
        key="att_metric",
    )
    st.plotly_chart(va.head_summary_figure(rows, n_layers, n_heads, metric, metric_names[metric], ax), width="stretch")
    columns = tuple(msg(f"attention.summary.{k}") for k in ("layer", "head", "kind"))
    st.dataframe(stats.summary_table(rows, metric_names, columns, ax), hide_index=True)
    for note in (["attention.gpt.no_next"] if gpt else []) + (["attention.summary.hidden"] if hide else []):
        st.caption(msg(note))


def word_tab(d: dict, tokens, keep, text: str, word: str, hide: bool, ax, tx) -> None:
    """Where the followed word's tokens look in each layer, and how far its vector drifts from layer 0."""
    tokens_all = d["tokens"]
    idx = stats.word_token_indices(d["spans"], tokens_all, text, word)
    if not word:
        st.info(msg("attention.word.none"))
    elif not idx:
        st.info(tx("word.absent", word=widgets.escape_md(word)))
    else:
        wa = stats.word_attention(d["att"], idx)  # (L, T) over all tokens
        w1, w2 = st.columns([3, 2])
        title = msg("attention.word.attention_title", word=word)
        fig = va.word_attention_figure(stats.keep_columns(wa, keep) if hide else wa, tokens, word, title, ax)
        w1.plotly_chart(fig, width="stretch")
        cos, names = stats.drift_from_layer0(d["layers"], idx), widgets.layer_labels(d["names"])
        w2.plotly_chart(va.drift_figure(cos, names, word, msg("attention.word.drift_title"), ax), width="stretch")
        chars = " ".join(widgets.escape_md(tokens_all[i]) for i in idx)
        st.caption(msg("attention.word.made_of", word=widgets.escape_md(word), chars=chars))

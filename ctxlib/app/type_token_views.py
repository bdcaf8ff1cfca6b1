"""Parts of the Type vs token page (pages/1_Type_vs_token.py): each model's map and heatmap, the accuracy tab."""

import streamlit as st

from ctxlib import explore
from ctxlib.app import explain, loaders, widgets
from ctxlib.app.i18n import msg
from ctxlib.app.memo import memo
from ctxlib.vecmath import cosine_matrix
from ctxlib.viz import explorer
from ctxlib.viz.common import PLOTLY_CONFIG, escape

TABS = ("accuracy", "nearest", "segmentation", "export")  # the page's tabs, in order (type_token.tabs.<name>)


@memo(512, key=lambda key, d, layer: key)
def _mean_type_cosine(key, d, layer: int) -> float:
    return explore.mean_type_cosine(d, layer)


@memo(128, key=lambda key, data, labels: key)
def _sense_accuracy(key, data, labels):
    return explore.sense_accuracy(data, labels)


def model_maps(data, stamps, layers, half, word, pairs, hover, method):
    """One column per model: the type/token map, its mean cosine and the sentences' cosine heatmap, on one scale."""
    texts, labels = tuple(s for s, _ in pairs), [lab for _, lab in pairs]
    sims = {m: cosine_matrix(d.vecs[:, layers[m]]).astype("float32") for m, d in data.items()}
    zmin = min([0.99, *(float(S.min()) for S in sims.values())])  # one colour scale for every model's heatmap
    for col, (m, d) in zip(st.columns(max(1, len(data))), data.items()):
        j, h = layers[m], half if m == "elmo" else None
        xy = loaders.projected(f"{m}|{stamps[m]}|{word}|{texts}|{j}|{h}", explore.type_token_points(d, j), method)
        fkey = f"{m}|{stamps[m]}|{word}|{pairs}|{j}|{method}|{h}"
        title = " · ".join([m, widgets.layer_label(d.layer_names[j])] + ([msg(f"triple.half.{h}")] if h else []))
        col.plotly_chart(
            loaders.cached_figure(
                "map|" + fkey,
                lambda: explorer.type_token_map(
                    xy,
                    hover,
                    labels if any(labels) else None,
                    title=title,
                    type_name=msg("type_token.maps.type_name"),
                    token_name=msg("type_token.maps.token_name"),
                    type_hover=escape(msg("type_token.maps.type_hover", word=word)),
                ),
            ),
            config=PLOTLY_CONFIG,
            key=f"map_{m}",
        )
        col.caption(msg("type_token.maps.mean_cosine", cos=_mean_type_cosine((m, stamps[m], word, texts, j), d, j)))
        col.plotly_chart(
            loaders.cached_figure(
                f"heat|{fkey}|{zmin}",
                lambda: explorer.similarity_heatmap(
                    sims[m], list(texts), hover, labels=labels, title=msg("type_token.maps.heatmap_title"), zmin=zmin
                ),
            ),
            config=PLOTLY_CONFIG,
            key=f"heat_{m}",
        )
    if len(data) > 1:
        st.caption(msg("type_token.maps.shared_scale", lo=zmin))


def accuracy_tab(data, stamps, texts, labels, word):
    """Per-layer sense accuracy (chart and table) against the majority-sense baseline, or why there is none."""
    key = (tuple((m, stamps[m]) for m in data), word, tuple(texts), tuple(labels))
    if (acc := _sense_accuracy(key, data, list(labels))) is None:
        st.info(msg("type_token.accuracy.need_labels"))
        return
    res, chance = {m: (widgets.layer_labels(ns), a) for m, (ns, a) in acc[0].items()}, acc[1]
    st.caption(msg("type_token.accuracy.caption"))
    explain.chance_note(word, labels, res, chance)  # above the chart, where the teacher looks
    st.plotly_chart(
        loaders.cached_figure(
            f"acc|{res}|{chance}",
            lambda: explorer.layer_accuracy_chart(
                res,
                chance,
                title=msg("type_token.accuracy.chart_title"),
                x_title=msg("type_token.accuracy.x_title"),
                y_title=msg("type_token.accuracy.y_title"),
                chance_fmt=msg("labels.axis.majority"),
            ),
        ),
        config=PLOTLY_CONFIG,
        key="acc",
    )
    st.dataframe(
        widgets.arrow_table([{msg(f"labels.table.{k}"): v for k, v in r.items()} for r in explore.accuracy_rows(res)]),
        hide_index=True,
    )

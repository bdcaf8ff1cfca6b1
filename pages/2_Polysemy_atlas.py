"""Polysemy atlas: every corpus occurrence of a word, one point per token (after Coenen et al. 2019, Context Atlas)."""

import time

import streamlit as st

from ctxlib import explore
from ctxlib.app import atlas_views, explain, loaders, state, widgets
from ctxlib.app.i18n import msg, prose
from ctxlib.corpus import SOURCE_NAMES
from ctxlib.projection import METHOD_NAMES
from ctxlib.viz import explorer
from ctxlib.viz.common import PLOTLY_CONFIG, escape

_t0 = time.perf_counter()
widgets.page_header("Polysemy atlas · ctxlab", "atlas.title")
st.markdown(prose("atlas_intro"))

model = widgets.model_radio("at", default=explore.ATLAS_DEFAULT["model"])
colours = ["pos", "source", "kmeans"]
colour_names = {c: msg(f"atlas.inputs.colour_{c}") for c in colours}
state.choice("at_colour", "colour", colours, what=msg("atlas.url.colour"), names=colour_names)  # bad links: a notice
state.choice("at_proj", "proj", list(METHOD_NAMES), what=msg("common.url.what_projection"), names=METHOD_NAMES)
c1, c2, c3, c4 = st.columns([1, 1, 1, 1])
word = c1.text_input(
    msg("atlas.inputs.word"),
    value=state.init("at_word", "word", explore.ATLAS_DEFAULT["word"], max_chars=12),
    key="at_word_w",
    max_chars=12,
).strip()
caps = [50, 100, 200, 300, 500, 1000]
state.integer("at_cap", "cap", 300, caps[0], caps[-1], caps)
cap = c2.select_slider(msg("atlas.inputs.cap"), caps, key="at_cap")
colour = c3.radio(
    msg("atlas.inputs.colour"), colours, horizontal=True, key="at_colour", format_func=colour_names.__getitem__
)
state.integer("at_k", "k", 3, 2, 8)
k = c4.slider("k", 2, 8, key="at_k", disabled=colour != "kmeans")
method = st.sidebar.radio(
    msg("atlas.sidebar.projection"), list(METHOD_NAMES), format_func=METHOD_NAMES.get, key="at_proj"
)
st.sidebar.caption(msg("atlas.sidebar.png"))
widgets.share_hint()
if not word or model is None:
    st.info(msg("atlas.inputs.type_a_word") if model else msg("atlas.inputs.no_model"))
    st.stop()

with loaders.busy(msg("atlas.map.finding", word=word), ("atlas", model, word, int(cap), loaders.model_stamp(model))):
    d = loaders.atlas_vectors(model, word, int(cap), loaders.model_stamp(model))
n = len(d.texts)
if n < 3:
    st.warning(widgets.escape_md(msg("atlas.map.too_few", total=d.total, word=word)))
    st.stop()
st.caption(msg("atlas.map.sample", total=d.total, n=n, cap=cap))
names = d.layer_names
if len(names) > 1:  # another model's layer moves to the same relative depth (the top stays the top)
    state.layer("at_layer", "layer", len(names))
layer = (
    st.select_slider(
        msg("atlas.map.layer"),
        list(range(len(names))),
        key="at_layer",
        format_func=[f"{j}: {n}" for j, n in enumerate(widgets.layer_labels(names))].__getitem__,
    )
    if len(names) > 1
    else 0
)
view = f"atlas|{loaders.model_stamp(model)}|{word}|{cap}|{layer}"  # names the data every cached result below is of
xy = loaders.projected(view, d.vecs[:, layer], method)
cats, words = explore.atlas_colouring(
    d, colour, layer, k, word, msg("atlas.map.no_tag"), {s: msg(f"labels.source.{s}") for s in SOURCE_NAMES}
)
hover = [
    explorer.mark_word(s, a, b) + f"<br>{escape(c)} · {escape(msg(f'labels.source.{src}'))}"
    for s, (a, b), c, src in zip(d.texts, d.spans, cats, d.sources)
]
st.plotly_chart(
    loaders.cached_figure(
        f"{view}|{method}|{colour}|{k}",
        lambda: explorer.atlas_map(
            xy,
            hover,
            cats,
            title=f"{word} · {model} · {widgets.layer_label(names[layer])} · {METHOD_NAMES[method]}",
            cluster_words=words,
        ),
    ),
    config=PLOTLY_CONFIG,
    key="atlas",
)
if colour == "pos":
    explain.tag_legend(cats)
if (tag_acc := explore.atlas_tag_accuracy(d, layer)) is not None:
    explain.tag_accuracy_note(word, *tag_acc)
if words:
    cols = [msg(f"atlas.map.{c}_col") for c in ("cluster", "size", "words")]
    st.dataframe(
        [dict(zip(cols, (c, cats.count(c), " · ".join(ws)))) for c, ws in sorted(words.items())], hide_index=True
    )

atlas_views.self_similarity(d, model, word, cap)
st.download_button(
    msg("atlas.map.download"),
    loaders.cached_bytes(f"{view}|{colour}|{k}|{cats}", lambda: explore.atlas_csv(d, layer, cats)),
    file_name=f"ctxlab_atlas_{word}_{model}_layer{layer}.csv",
    mime="text/csv",
)
st.query_params.update(
    {"word": word, "cap": str(cap), "model": model, "layer": str(layer), "colour": colour, "k": str(k), "proj": method}
)
widgets.record_time("atlas", _t0)

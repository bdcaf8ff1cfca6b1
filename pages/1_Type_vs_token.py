"""Type vs token: one vector per word type (word2vec) or one per token (ELMo, BERT)."""

import functools
import time

import streamlit as st

from ctxlib import examples, explore
from ctxlib.app import elmo_halves, explain, loaders, state, type_token_views, vocab_notes, widgets
from ctxlib.app.i18n import msg, prose
from ctxlib.projection import METHOD_NAMES
from ctxlib.viz import explorer

_t0 = time.perf_counter()
widgets.page_header("Type vs token · ctxlab", "type_token.title")
st.markdown(prose("type_token_intro"))

# -- inputs (shareable through the URL: ?set=活动 or ?word=..&s=..) ------------------------------
models = widgets.models_sidebar("tt")
tl = widgets.text_language(models, "tt")  # "en" when every chosen model reads English: the English example sets
all_sets = examples.sets_for(tl)  # default set first
sets = list(all_sets)
titles = {k: msg(f"type_token.sets.{k}" if tl == "zh" else f"examples.sets_en.{k}") for k in sets}
name = state.choice("tt_set", "set", sets, what=msg("type_token.url.set"), names=titles)  # bad links: a notice
state.init("tt_word", "word", all_sets[name]["word"], max_chars=examples.MAX_WORD_CHARS)
state.init("tt_text", "s", examples.example_text(name, tl))
left, right = st.columns([1, 2])
left.selectbox(
    msg("type_token.inputs.set"),
    sets,
    key="tt_set",
    format_func=titles.__getitem__,
    on_change=lambda: st.session_state.update(
        tt_word=all_sets[st.session_state["tt_set"]]["word"],
        tt_text=examples.example_text(st.session_state["tt_set"], tl),
    ),
)
left.text_input(msg("type_token.inputs.word"), key="tt_word", max_chars=examples.MAX_WORD_CHARS)
right.text_area(msg("type_token.inputs.sentences"), key="tt_text", height=200)
method = st.sidebar.radio(
    msg("type_token.sidebar.projection"),
    list(METHOD_NAMES),
    format_func=METHOD_NAMES.get,
    index=list(METHOD_NAMES).index(
        state.choice("tt_proj", "proj", list(METHOD_NAMES), what=msg("common.url.what_projection"), names=METHOD_NAMES)
    ),
    key="tt_proj_w",
)
st.sidebar.caption(msg("type_token.sidebar.png"))
widgets.share_hint()

word, pairs, notes = examples.check_inputs(st.session_state["tt_word"], st.session_state["tt_text"])
for note in notes:
    getattr(st, note.level)(widgets.escape_md(msg(note.id, **note.values)))
shared = {"word": st.session_state["tt_word"], "s": st.session_state["tt_text"][: examples.MAX_INPUT_CHARS]}
custom = (shared["word"], st.session_state["tt_text"]) != (all_sets[name]["word"], examples.example_text(name, tl))
st.query_params.update({"set": name, "proj": method, **(shared if custom else {})})
for k in () if custom else shared:
    st.query_params.pop(k, None)
if any(note.level == "error" for note in notes) or not models:
    st.stop()

texts, labels = tuple(s for s, _ in pairs), [lab for _, lab in pairs]
hover = [explorer.mark_word(s, *explore.find_first(s, word)) for s in texts]
data, stamps = {}, {m: loaders.model_stamp(m) for m in models}
with loaders.busy(msg("type_token.maps.encoding"), ("word_tokens", tuple(stamps.items()), word, texts)):
    for m in models:
        try:
            data[m] = loaders.word_tokens(m, word, texts, stamps[m])
        except Exception as e:  # a model failing must not take the other models down
            widgets.show_error(f"{m}: {explain.error_text(e)}")
vocab_notes.show(seen := {m: vocab_notes.status(m, word, stamps[m]) for m in data}, word)
data = {m: d for m, d in data.items() if seen[m].status != "missing"}  # no vector: no all-zero points and cosines
if not data:
    st.stop()
layers = widgets.layer_pickers("tt", {m: d.layer_names for m, d in data.items()})
full = dict(data)  # the CSV holds whole vectors; ELMo's may be shown as one half (forward / backward LSTM)
half = elmo_halves.picker(data, texts, word)

type_token_views.model_maps(data, stamps, layers, half, word, pairs, hover, method)

# only the open tab runs (a class reloading the page draws one tab, not four); a link with ?near= opens the nearest
# words (its switch and any notice about the value are in that tab)
sentence_col, names = msg("type_token.tabs.sentence_col"), [msg(f"type_token.tabs.{k}") for k in type_token_views.TABS]
tab_acc, tab_near, tab_seg, tab_csv = st.tabs(
    names, key="tt_tab", on_change="rerun", default=names[1] if "near" in st.query_params else None
)
if tab_near.open:
    with tab_near:
        vocab_notes.nearest_tab(data, stamps, layers, half, word, texts, sentence_col)
if tab_seg.open:
    with tab_seg:
        st.caption(msg("type_token.segmentation.caption"))
        st.dataframe(
            widgets.arrow_table(
                explore.segmentation_table(data, texts, sentence_col, msg("type_token.segmentation.pooled"))
            ),
            hide_index=True,
        )
if tab_acc.open:
    with tab_acc:
        type_token_views.accuracy_tab(data, stamps, texts, labels, word)
if tab_csv.open:
    with tab_csv:
        # deferred: the CSV (~0.1 s of formatting) is written when the button is clicked, not on every first run
        st.download_button(
            msg("type_token.export.download"),
            functools.partial(explore.vectors_csv, full, texts, labels, word),
            file_name=f"ctxlab_{word}_vectors.csv",
            mime="text/csv",
        )
        st.caption(msg("type_token.export.caption"))
widgets.record_time("type_token", _t0)

"""Page furniture: the header, model and layer pickers, user-facing errors (the home page's model tables are in
model_table.py).

Widgets keep their values in the URL (see `state`), so a link reopens the same view.
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import streamlit as st

from ctxlib import checkpoint, kinds

from . import loaders, present, state, teachers, timing
from .i18n import LANGS, bad_lang_param, escape_md, lang, language_switch, msg
from .teachers import command_line, eval_line, for_teachers  # noqa: F401 (pages call widgets.for_teachers)

PAGES = (
    "Lesson",
    "Type_vs_token",
    "Polysemy_atlas",
    "ELMo_layers",
    "BERT_attention",
    "Transformer",
    "BERT_pretraining",
    "GPT_writing",
    "Results",
    "BERT_finetuning",
    "Training",
)
TAB_TITLE = "ctxlab_tab_title"  # session key: the browser tab's title in the session's language, set by app.py
APP_SCRIPT = Path(__file__).resolve().parents[2] / "app.py"  # the entrypoint, whose st.navigation lists the pages
_LEFT_FILE_NAVIGATION = "ctxlab_left_file_navigation"  # session key: the rerun out of the pages-directory mode is done


def app_pages(home) -> list:
    """app.py's page list for st.navigation: `home` (a function) as the default page, then pages/ in file order, each
    named in the session's language and kept at the URL path Streamlit gave it from its file name (/Type_vs_token, ...),
    so old links work."""
    # url_path: the page's key whatever function `home` is (as the default page its URL is /)
    pages = [st.Page(home, title=msg("pages.Home.label"), icon="🍎", default=True, url_path="home")]
    for f in sorted((APP_SCRIPT.parent / "pages").glob("*.py")):
        pages.append(st.Page(f"pages/{f.name}", title=page_label(f.stem), url_path=f.stem.split("_", 1)[1]))
    return pages


def _not_run() -> None:
    """Home's stand-in in `_leave_pages_directory_mode`'s page list: that list only resolves the page, nothing runs."""


def _leave_pages_directory_mode() -> None:
    """On a fresh server, a session whose first visit opens a page URL can run the pages-directory way (pages/ file
    names as sidebar labels, the home page as "app", in English; app.py and its st.navigation never run). Streamlit
    picks that way per run from a process-wide switch that the first st.navigation call turns off, so sessions opened
    at the same moment can start that way and find the switch already off by another session's app.py run: checking
    the switch (the old fix) missed them. This checks the session instead: app.py sets TAB_TITLE on every run of its
    navigation, so a page that runs under an app.py server without it is under the pages-directory navigation. Then
    st.navigation with app.py's pages (public: calling it is what turns the pages directory off; the same URL paths
    keep this page the current one) and a rerun, which goes through app.py. A page run on its own (AppTest.from_file
    on the page) is its own entrypoint and is left alone; at most one such rerun a session."""
    if TAB_TITLE in st.session_state or st.session_state.get(_LEFT_FILE_NAVIGATION):
        return
    entrypoint = getattr(sys.modules.get("__main__"), "__file__", None)
    if entrypoint is None or Path(entrypoint).resolve() != APP_SCRIPT:
        return
    st.session_state[_LEFT_FILE_NAVIGATION] = True
    st.navigation(app_pages(_not_run), position="hidden")
    st.rerun()


def page_header(page_title: str, title_id: str, icon: str | None = None) -> None:
    """Every page's opening: page config, the sidebar language switch (kept in ?lang=), the presentation toggle
    (kept in ?present=1), the title.

    `page_title` titles the browser tab when the page runs on its own; under app.py's navigation the tab shows the
    page's name in the session's language."""
    _leave_pages_directory_mode()
    st.set_page_config(page_title=st.session_state.get(TAB_TITLE, page_title), page_icon=icon, layout="wide")
    language_switch()
    keep_choices_across_languages()
    present.sidebar_toggle()
    if (bad := bad_lang_param()) is not None:
        state.notice("common.url.bad_choice", "lang", bad, what=msg("common.url.what_lang"), default=LANGS[lang()])
    st.title(msg(title_id))
    teachers.start_page()  # the slot of the page's one "for teachers" expander


# Pickers (session-state keys, any page) whose option labels are in the interface language and that take no index=
# or value= of their own (their choice lives in the session state): Type vs token's example set, the ELMo page's
# live task, the atlas's colouring, the attention page's summary measure, the Training page's mode, layer, model and
# text. A picker drawn with index= (e.g. ELMo's half) gets its label in the new language from that index.
LABELLED_CHOICES = (
    "tt_set",
    "elmo_live_task",
    "at_colour",
    "att_metric",
    "tr_mode",
    "tr_layer",
    "lv_kind",
    "lv_source",
)
_LANG_SEEN = "ctxlab_lang_seen"


def keep_choices_across_languages(keys=LABELLED_CHOICES) -> None:
    """Streamlit (1.67) keeps a radio's or selectbox's value in the browser as the label it shows; after the interface
    language changes, that label is none of the new labels, and the picker shows nothing selected (while the page
    goes on with the old choice). Setting each kept choice again from the session state, once after a language
    change and before the pickers are drawn, sends the browser its label in the new language."""
    if st.session_state.get(_LANG_SEEN) == lang():
        return
    for k in keys:
        if k in st.session_state:
            st.session_state[k] = st.session_state[k]
    st.session_state[_LANG_SEEN] = lang()


_LAYER_IDS = {
    "embeddings": "embeddings",
    "char-CNN token layer": "char_cnn",
    "type vector": "type_vector",
    "type vector (word2vec)": "type_vector_w2v",
}
_NUMBERED_LAYER = re.compile(r"(biLSTM layer|layer) (\d+)")


def arrow_table(data):
    """Rows (a list of dicts) or columns (a dict of lists) as a pyarrow Table for st.dataframe, which takes one as it
    is: ~0.1 ms against ~0.8 ms for the pandas conversion it makes of anything else (each page run, each table).
    Data pyarrow cannot type (a column mixing numbers and text) is returned unchanged."""
    import pyarrow as pa

    try:
        return pa.Table.from_pylist(data) if isinstance(data, list) else pa.Table.from_pydict(data)
    except (pa.ArrowException, TypeError, ValueError):
        return data


def layer_label(name: str) -> str:
    """A library layer name ("embeddings", "layer 3", "biLSTM layer 2", "char-CNN token layer", "type vector (word2vec)")
    in the session's language; any other name is returned as it is."""
    if name in _LAYER_IDS:
        return msg(f"labels.layer.{_LAYER_IDS[name]}")
    if m := _NUMBERED_LAYER.fullmatch(name):
        return msg("labels.layer.bilstm" if m[1] == "biLSTM layer" else "labels.layer.n", n=int(m[2]))
    return name


def layer_labels(names) -> list[str]:
    """layer_label of each name."""
    return [layer_label(n) for n in names]


def show_error(message: str) -> None:
    """A user-facing error (markdown-escaped so user text never renders as HTML/markdown)."""
    st.error(escape_md(message))


def model_label(name: str) -> str:
    """How a picker shows a model: the shipped kinds in capitals (BERT, GPT), a registered model by its own name."""
    return name.upper() if name in kinds.names() else name


def is_causal(name: str) -> bool:
    """The model reads left to right only (GPT, a registered causal LM); False when it does not load."""
    enc, _ = loaders.try_load(name)
    return enc is not None and kinds.family_of(enc) == "causal"


def text_language(models: list[str], key: str) -> str:
    """The language of the example sentences for these models: "en" when every one of them reads English (a
    registered English Transformers model), else "zh". When it changes, the page's set, word and sentences (session
    keys `<key>_set`, `<key>_word`, `<key>_text`) start again from that language's default set."""
    encs = [loaders.try_load(m)[0] for m in models]
    code = "en" if encs and all(getattr(e, "language", "zh") == "en" for e in encs if e is not None) else "zh"
    if st.session_state.get(f"{key}_text_lang", code) != code:
        for k in ("set", "word", "text"):
            st.session_state.pop(f"{key}_{k}", None)
        for p in ("set", "word", "s"):  # the link's set and sentences were the other language's
            st.query_params.pop(p, None)
    st.session_state[f"{key}_text_lang"] = code
    return code


def require_model(name: str, label: str):
    """(encoder, cache stamp) of model `name`, or a warning with the error and the build command, and the page stops."""
    enc, err = loaders.try_load(name)
    if enc is None:
        st.warning(escape_md(msg("common.model_unavailable", model=label) + err))
        st.info(msg("teachers.see"))
        for_teachers([command_line("teachers.build", checkpoint.rebuild_command(name), model=label)])
        st.stop()
    _builds_for_teachers([name])
    return enc, loaders.model_stamp(name)


def missing_model_note(msg_id: str, name: str, **values) -> None:
    """An info line that model `name` is not there (msg_id's text), its build command in the teachers' expander."""
    st.info(msg(msg_id, **values))
    for_teachers([command_line("teachers.build", checkpoint.rebuild_command(name), model=name)])


def _builds_for_teachers(models) -> None:
    """The build command of each shipped model a page shows, in the teachers' expander."""
    if lines := [
        command_line("teachers.build", checkpoint.rebuild_command(m), model=m)
        for m in models
        if m in kinds.names(trainable=True)
    ]:
        for_teachers(lines)


def _available(status: dict) -> list[str]:
    """The loadable models; the missing ones listed in the sidebar with their build command."""
    ok = [m for m in status if status[m] is None]  # model_order(), then this session's live models
    if not ok:
        st.warning(msg("common.no_model"))
        for_teachers(
            [command_line("teachers.build", checkpoint.rebuild_command(m), model=m) for m in kinds.names(shipped=True)]
        )
    return ok


def _missing_in_sidebar(status: dict) -> None:
    for m in loaders.model_order():
        if status.get(m) is None:
            continue
        if loaders.is_registered(m):  # a teacher's model that failed to load: its one line, no build command
            st.sidebar.caption(escape_md(status[m]))
        else:
            st.sidebar.caption(msg("common.model_missing", model=m))
            for_teachers([command_line("teachers.build", checkpoint.rebuild_command(m), model=m)])


def models_sidebar(key: str, default: tuple[str, ...] | None = None) -> list[str]:
    """Sidebar multiselect of the loadable models (?models=a,b); missing ones named with their build command."""
    status = loaders.model_status()
    ok = _available(status)
    wkey = f"{key}_models"
    if wkey not in st.session_state:
        st.session_state[wkey] = [m for m in state.model_list() if m in ok] or [m for m in (default or ok) if m in ok]
    chosen = st.sidebar.multiselect(msg("common.models"), ok, key=wkey, help=msg("common.models_help"))
    _missing_in_sidebar(status)
    _builds_for_teachers(chosen)
    st.query_params["models"] = ",".join(chosen)
    return chosen


def model_radio(key: str, default: str | None = None, view: str | None = None) -> str | None:
    """Sidebar radio of the loadable models (?model=...; else `default` if loadable, else the last one); missing ones
    named with their build command. With `view`, only the models that view takes (kinds.FAMILY_VIEWS)."""
    status = loaders.model_status()
    ok = _available(status) if view is None else loaders.models_for(view)
    if not ok:
        return None
    wkey = f"{key}_model"
    if (first := wkey not in st.session_state) or st.session_state[wkey] not in ok:
        qp = st.query_params.get("model")
        st.session_state[wkey] = qp if qp in ok else (default if default in ok else ok[-1])
        if first and qp is not None and qp not in ok and qp.startswith(loaders.LIVE_PREFIX):  # another session's
            state.notice("live.url.elsewhere", "model", qp)
        elif first and qp is not None and qp not in ok:  # a link's unknown or unbuilt model
            state.notice(
                "common.url.bad_choice", "model", qp, what=msg("common.url.what_model"), default=st.session_state[wkey]
            )
    chosen = st.sidebar.radio(msg("common.model"), ok, key=wkey, format_func=model_label if view else str)
    _missing_in_sidebar(status)
    _builds_for_teachers([chosen])
    return chosen


def layer_pickers(key: str, layer_names: dict[str, list[str]]) -> dict[str, int]:
    """One layer select per model with more than one layer (default: the top layer); kept in ?layers=elmo:2,bert:4.

    The select's value is written to session state on every run, so a select re-created after a run that did not draw
    it (an input error stopped the page, a model's data was missing) shows the layer the plots use, not its first
    option; ?layers= keeps the layers of models not drawn this run."""
    qp = state.layer_choices()
    multi = {m: ns for m, ns in layer_names.items() if len(ns) > 1}
    out = {m: 0 for m in layer_names}
    cols = st.columns(max(1, len(multi))) if multi else []
    for col, (m, names) in zip(cols, multi.items()):
        wkey, top = f"{key}_layer_{m}", len(names) - 1
        j = st.session_state.get(wkey)
        if not isinstance(j, int) or not 0 <= j <= top:  # first run, or a stale value (another checkpoint)
            j = qp.get(m, top)
            if not 0 <= j <= top:
                state.notice("common.url.bad_layer", "layers", j, model=m, hi=top, default=top)
                j = top
        st.session_state[wkey] = j
        out[m] = col.selectbox(
            msg("common.layer_of", model=m),
            list(range(len(names))),
            key=wkey,
            format_func=[f"{j}: {n}" for j, n in enumerate(layer_labels(names))].__getitem__,
        )
    keep = {**{m: j for m, j in qp.items() if m not in multi}, **{m: out[m] for m in multi}}
    st.query_params["layers"] = ",".join(f"{m}:{keep[m]}" for m in loaders.model_order() if m in keep)
    return out


_UPLOADER_CSS = """<style>
[data-testid="stFileUploaderDropzoneInstructions"] {{ display: none; }}
[data-testid="stFileUploaderDropzone"] button [data-testid="stMarkdownContainer"] {{ display: none; }}
[data-testid="stFileUploaderDropzone"] button span[data-has-shortcut]::after {{ content: "{button}"; }}
</style>"""


def uploader_style() -> None:
    """Streamlit (1.67) writes its file uploader's button ("Upload") and size line ("1MB per file • JSON") in English
    whatever the page's language, with no parameter to change them: this hides the size line (the caller says what to
    upload and the limit in a caption or the label) and writes the button's word in the page's language."""
    st.html(_UPLOADER_CSS.format(button=msg("teachers.upload.button").replace('"', "")))


def share_hint() -> None:
    """Sidebar note: the URL holds the page's settings."""
    st.sidebar.caption(msg("common.share_hint"))


def record_time(page: str, t0: float) -> float:
    """Server time of this script run in ms; kept in session state and written to the timing log (app.timing)."""
    ms = (time.perf_counter() - t0) * 1000
    st.session_state[f"{page}_server_ms"] = ms
    timing.write(page, ms)
    return ms


def page_label(stem: str) -> str:
    """'1_Type_vs_token' -> the page's name in the current language."""
    name = stem.split("_", 1)[1] if stem[:1].isdigit() and "_" in stem else stem
    return msg(f"pages.{name}.label") if name in PAGES else name.replace("_", " ")


def page_hint(stem: str) -> str | None:
    name = stem.split("_", 1)[-1]
    return msg(f"pages.{name}.hint") if name in ("Type_vs_token", "Polysemy_atlas") else None

"""Streamlit glue: the only module in ctxlib that imports streamlit.

- `t(zh, en)`: interface text in the chosen language (中文 / English); strings
  live next to where they are used, so pages stay self-contained.
- `language_switch()`: sidebar selector, defaulting to the browser's locale.
- cached loaders keyed by strings (`load_encoder(name)`), and `model_status()`.
- `show_error(...)`: a clear message instead of a traceback.
"""
from __future__ import annotations

import numpy as np
import streamlit as st

import ctxlib
from ctxlib import checkpoint

LANG_KEY = "ctxlab_lang"
MODEL_ORDER = ("word2vec", "elmo", "bert")


def _default_lang() -> str:
    qp = st.query_params.get("lang")
    if qp in ("zh", "en"):
        return qp
    loc = None
    try:
        loc = st.context.locale  # browser locale, e.g. "zh-CN" (Streamlit >= 1.4x)
    except Exception:
        loc = None
    return "zh" if (loc or "").lower().startswith("zh") else "en"


def lang() -> str:
    if LANG_KEY not in st.session_state:
        st.session_state[LANG_KEY] = _default_lang()
    return st.session_state[LANG_KEY]


def t(zh: str, en: str) -> str:
    """The interface string in the current language."""
    return zh if lang() == "zh" else en


def language_switch() -> None:
    cur = lang()
    choice = st.sidebar.radio("语言 / Language", ["中文", "English"], index=0 if cur == "zh" else 1,
                              horizontal=True, key="ctxlab_lang_radio")
    new = "zh" if choice == "中文" else "en"
    if new != cur:
        st.session_state[LANG_KEY] = new
        st.rerun()


@st.cache_resource(show_spinner=False)
def load_encoder(name: str):
    """A loaded Encoder, cached across reruns and sessions."""
    return ctxlib.load(name)


def try_load(name: str):
    """(encoder, None) or (None, message naming the rebuild command)."""
    try:
        return load_encoder(name), None
    except checkpoint.CheckpointError as e:
        return None, str(e)
    except Exception as e:  # a broken checkpoint must not take the page down
        return None, f"{name}: {type(e).__name__}: {e}. Rebuild with: {checkpoint.rebuild_command(name)}"


def model_status() -> dict[str, str | None]:
    """{model name: None if loadable else the message to show}, for the three standard models."""
    out = {}
    for name in MODEL_ORDER:
        _, err = try_load(name)
        out[name] = err
    return out


def show_error(message: str) -> None:
    """A user-facing error (markdown-escaped so user text never renders as HTML/markdown)."""
    st.error(escape_md(message))


def escape_md(text: str) -> str:
    """Escape markdown/HTML specials in user text for st.markdown/st.error."""
    out = []
    for ch in str(text):
        if ch in "\\`*_{}[]()#+-.!|<>$~":
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


# --- explorer helpers (app pages: home, type vs token, polysemy atlas) ---------------------------
def model_stamp(name: str) -> str:
    """A string that changes when the loaded model changes (cache key part for st.cache_data)."""
    enc, _ = try_load(name)
    if enc is None:
        return "missing"
    path = getattr(enc, "path", None)
    mtime = ""
    try:
        mtime = str((path / "config.json").stat().st_mtime_ns) if path else ""
    except OSError:
        pass
    return f"{name}:{path}:{mtime}:{id(enc)}"


def models_sidebar(key: str, default: tuple[str, ...] | None = None) -> list[str]:
    """Sidebar multiselect of the loadable models; missing ones are listed greyed out with the command that builds them.

    Reads and keeps the `models` query parameter (comma-separated)."""
    status = model_status()
    ok = [m for m in MODEL_ORDER if status[m] is None]
    wkey = f"{key}_models"
    if wkey not in st.session_state:
        qp = [m for m in st.query_params.get("models", "").split(",") if m in ok]
        st.session_state[wkey] = qp or [m for m in (default or ok) if m in ok]
    chosen = st.sidebar.multiselect(t("模型", "Models"), ok, key=wkey,
                                    help=t("只列出已训练好的模型。", "Only models with a checkpoint are listed."))
    for m in MODEL_ORDER:
        if status[m] is not None:
            st.sidebar.caption(t(f"~~{m}~~ 不可用。构建命令：", f"~~{m}~~ not available. Build it with:") +
                               f" `{checkpoint.rebuild_command(m)}`")
    if not ok:
        st.warning(t("还没有可用的模型。先训练一个：`python -m ctxlib train word2vec`（几分钟）。",
                     "No model is available yet. Train one first: `python -m ctxlib train word2vec` (a few minutes)."))
    st.query_params["models"] = ",".join(chosen)
    return chosen


def qp_init(key: str, param: str, default):
    """Session-state value for widget `key`, taken from query parameter `param` on the session's first run."""
    if key not in st.session_state:
        st.session_state[key] = st.query_params.get(param, default) if param in st.query_params else default
    return st.session_state[key]


def sync_lang_param() -> None:
    st.query_params["lang"] = lang()


def page_header(page_title: str, zh: str, en: str, icon: str | None = None) -> None:
    """Every page's opening: page config, the sidebar language switch (kept in ?lang= so links share it), the title."""
    st.set_page_config(page_title=page_title, page_icon=icon, layout="wide")
    language_switch()
    sync_lang_param()
    st.title(t(zh, en))


def _encode_word(enc, texts: list[str], word: str) -> dict:
    """Vectors of `word` in each text (mean over its tokens at the first occurrence, as Encoder.word_vectors),
    the word encoded alone (its context-free type vector), and what the page shows about tokenisation.
    One encode() call for everything: the texts and the word alone share a batch. No streamlit here."""
    from .encoder import WordNotFound

    encs = enc.encode(list(texts) + [word], target=word, batch_size=64)
    vecs, pooled, segs = [], [], []
    for i, e in enumerate(encs):
        idx = e.word_indices(word)
        if not idx:
            raise WordNotFound(word, i, e.text)
        vecs.append(e.layers[:, idx, :].mean(1))  # (L, D)
        pooled.append([e.tokens[j] for j in idx])
        segs.append(" / ".join(("【" + tok + "】") if j in idx else tok for j, tok in enumerate(e.tokens)))
    vecs = np.stack(vecs).astype(np.float32)  # (n + 1, L, D)
    return {"vecs": vecs[:-1], "pooled": pooled[:-1], "segmentation": segs[:-1], "type_vec": vecs[-1],
            "layer_names": list(encs[0].layer_names), "truncated": [bool(e.truncated) for e in encs[:-1]],
            "in_vocab": bool(enc.in_vocab(word)), "word_level": bool(getattr(enc, "word_level", True))}


@st.cache_data(show_spinner=False, max_entries=256)
def word_tokens(model: str, word: str, texts: tuple[str, ...], stamp: str) -> dict:
    """Cached `_encode_word` for a loaded model (`stamp` = model_stamp(model))."""
    return _encode_word(load_encoder(model), list(texts), word)


NEAREST_VOCAB = 3000  # most frequent vocabulary words searched for nearest neighbours (contextual models)


@st.cache_resource(show_spinner=False, max_entries=8)
def vocab_matrix(model: str, stamp: str) -> tuple[list[str], np.ndarray]:
    """(words, (n, n_layers, dim) unit vectors): Encoder.type_matrix of the NEAREST_VOCAB most frequent words."""
    words, m = load_encoder(model).type_matrix(NEAREST_VOCAB)
    return list(words), m


@st.cache_data(show_spinner=False, max_entries=256)
def nearest_table(model: str, word: str, texts: tuple[str, ...], layer: int, stamp: str, topn: int = 5) -> list[str]:
    """For each text: the nearest vocabulary words (encoded alone) to the word's token vector at `layer`, as one string."""
    words, M = vocab_matrix(model, stamp)
    vecs = word_tokens(model, word, texts, stamp)["vecs"][:, layer, :]
    V = vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
    sims = V @ M[:, layer, :].T  # (n_texts, n_words)
    out = []
    for row in sims:
        best = [(words[i], row[i]) for i in np.argsort(-row)[:topn + 1] if words[i] != word][:topn]
        out.append("  ".join(f"{w} {s:.2f}" for w, s in best))
    return out


ATLAS_WINDOW = 60  # characters of context kept around each occurrence (ELMo, 300 sentences: 60 -> ~10-20 s, 100 -> ~60 s)


def _crop(o, size: int):
    """The occurrence with its sentence cut to `size` characters centred on the word (spans shifted)."""
    from dataclasses import replace

    if len(o.text) <= size:
        return o
    a = max(0, min(o.start - (size - (o.end - o.start)) // 2, len(o.text) - size))
    return replace(o, text=o.text[a:a + size], start=o.start - a, end=o.end - a)


def _atlas_vectors(enc, word: str, cap: int, seed: int = 0) -> dict:
    """Token vectors of `word` at its corpus occurrences, plus one random other token per sentence (the baseline)."""
    from . import corpus
    from .tokens import segment

    occ, total = corpus.occurrences(word, cap=cap, seed=seed)
    rng = np.random.default_rng(seed)
    vecs, base, contexts = [], [], []
    keep = []
    window = min(ATLAS_WINDOW, int(enc.config.get("max_len", 10**6)) - 4)
    occ = [_crop(o, window) for o in occ]  # the word must fall inside the model's length limit
    # One batch for all: a batch-size-independent result (ELMo's char-CNN pads words to the batch's longest word,
    # so its context-free layer otherwise differs between batches), and on CPU no slower than batches of 64.
    encs = enc.encode([o.text for o in occ], target=word, batch_size=max(1, len(occ))) if occ else []
    for o, e in zip(occ, encs):
        idx = e.token_indices(o.start, o.end)
        if not idx:
            continue
        others = [j for j, (a, b) in enumerate(e.spans) if b > a and j not in idx]
        vecs.append(e.layers[:, idx, :].mean(1))  # (L, D)
        base.append(e.layers[:, others[rng.integers(len(others))], :] if others else e.layers[:, idx[0], :])
        contexts.append([w for w, _, _ in segment(o.text, word) if w != word])
        keep.append(o)
    names = list(encs[0].layer_names) if encs else list(enc.layer_names)
    return {"texts": [o.text for o in keep], "spans": [(o.start, o.end) for o in keep],
            "tags": [o.tag for o in keep], "sources": [o.source for o in keep], "total": total,
            "vecs": np.stack(vecs).astype(np.float32) if vecs else np.zeros((0, len(names), enc.dim), np.float32),
            "base": np.stack(base).astype(np.float32) if base else np.zeros((0, len(names), enc.dim), np.float32),
            "contexts": contexts, "layer_names": names}


@st.cache_data(show_spinner=False, max_entries=32)
def atlas_vectors(model: str, word: str, cap: int, stamp: str) -> dict:
    return _atlas_vectors(load_encoder(model), word, cap)


@st.cache_data(show_spinner=False, max_entries=64)
def _projected(key: str, _X: np.ndarray, method: str) -> np.ndarray:
    from .projection import project

    return project(_X, method)


def projected(key: str, X: np.ndarray, method: str) -> np.ndarray:
    """Cached 2-D projection; `key` names the data (model/word/sentences/layer), so X is never hashed.
    t-SNE and UMAP get a spinner: UMAP's first use in a server compiles numba code (up to a minute on a busy CPU)."""
    if method == "pca":
        return _projected(key, X, method)
    msg = t("正在计算 UMAP（首次使用需编译，可能要一分钟）…", "Computing UMAP (the first use compiles code: up to a minute)…") \
        if method == "umap" else t("正在计算 t-SNE…", "Computing t-SNE…")
    with st.spinner(msg):
        return _projected(key, X, method)


def find_first(text: str, word: str) -> tuple[int, int]:
    """Span of the first occurrence of `word` (NFKC-insensitive), or (0, 0)."""
    from .tokens import find_all

    spans = find_all(text, word)
    return spans[0] if spans else (0, 0)


def cosine_matrix(X: np.ndarray) -> np.ndarray:
    U = X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)
    return np.clip(U @ U.T, -1.0, 1.0)


def layer_pickers(key: str, layer_names: dict[str, list[str]]) -> dict[str, int]:
    """One layer select per model with more than one layer (default: the top layer); kept in ?layers=elmo:2,bert:4."""
    qp = {}
    for part in st.query_params.get("layers", "").split(","):
        m, _, j = part.partition(":")
        if j.isdigit():
            qp[m] = int(j)
    multi = {m: ns for m, ns in layer_names.items() if len(ns) > 1}
    out = {m: 0 for m in layer_names}
    cols = st.columns(max(1, len(multi))) if multi else []
    for col, (m, names) in zip(cols, multi.items()):
        wkey = f"{key}_layer_{m}"
        if wkey not in st.session_state or st.session_state[wkey] >= len(names):
            st.session_state[wkey] = min(qp.get(m, len(names) - 1), len(names) - 1)
        out[m] = col.selectbox(t(f"{m} 的层", f"{m} layer"), list(range(len(names))), key=wkey,
                               format_func=lambda j, names=names: f"{j}: {names[j]}")
    st.query_params["layers"] = ",".join(f"{m}:{j}" for m, j in out.items() if m in multi)
    return out


def sense_accuracy(data: dict, labels: list) -> tuple[dict, float] | None:
    """({model: (layer names, LOO nearest-centroid accuracy per layer)}, majority-class rate) on the labelled
    sentences, or None when there are fewer than two labels with two sentences each."""
    from collections import Counter

    from .analysis import layer_sense_accuracy

    idx = [i for i, lab in enumerate(labels) if lab]
    counts = Counter(labels[i] for i in idx)
    if len([c for c in counts.values() if c >= 2]) < 2:
        return None
    idx = [i for i in idx if counts[labels[i]] >= 2]
    y = [labels[i] for i in idx]
    chance = max(Counter(y).values()) / len(y)
    return {m: (d["layer_names"], layer_sense_accuracy(d["vecs"][idx], y)) for m, d in data.items()}, chance


@st.cache_data(show_spinner=False, max_entries=32)
def _csv_bytes(key: str, _data: dict, texts: tuple, labels: tuple, word: str) -> bytes:
    import csv
    import io

    buf = io.StringIO()
    w = csv.writer(buf)
    dim = max((d["vecs"].shape[2] for d in _data.values()), default=0)
    w.writerow(["model", "layer", "layer_name", "sentence_no", "sentence", "label", "word"] + [f"d{k}" for k in range(dim)])
    for m, d in _data.items():
        for j, name in enumerate(d["layer_names"]):
            for i, s in enumerate(texts):
                w.writerow([m, j, name, i + 1, s, labels[i] or "", word] + [f"{x:.6g}" for x in d["vecs"][i, j]])
    return buf.getvalue().encode("utf-8-sig")  # BOM: Excel opens the Chinese text correctly


def vectors_csv(data: dict, texts: tuple, labels: list, word: str) -> bytes:
    """CSV of every model's, layer's and sentence's vector of the word."""
    key = f"{[(m, model_stamp(m)) for m in data]}|{word}|{texts}|{labels}"
    return _csv_bytes(key, data, tuple(texts), tuple(labels), word)


def record_time(page: str, t0: float) -> float:
    """Server time of this script run in ms; kept in session state and, if CTXLAB_TIMING_LOG is set, appended there."""
    import os
    import time

    ms = (time.perf_counter() - t0) * 1000
    st.session_state[f"{page}_server_ms"] = ms
    log = os.environ.get("CTXLAB_TIMING_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as f:
            f.write(f"{time.time():.3f}\t{page}\t{ms:.1f}\n")
    return ms


def demo_cosines(models: list[str], word: str, s1: str, s2: str) -> tuple[list[tuple[str, str, float]], list[tuple[str, str]]]:
    """Home demo: [(model, layer name, cos of the word's vectors in s1 and s2)] and messages [(zh, en)]."""
    from .tokens import find_all

    word, s1, s2 = (word or "").strip(), (s1 or "").strip(), (s2 or "").strip()
    if not word or not s1 or not s2:
        return [], [("请填写目标词和两个句子。", "Fill in the word and both sentences.")]
    missing = [lab for lab, s in (("A", s1), ("B", s2)) if not find_all(s, word)]
    if missing:
        return [], [(f"句子 {'、'.join(missing)} 里没有“{word}”。请在两个句子里都用上这个词。",
                     f"Sentence {' and '.join(missing)} does not contain '{word}'. Use the word in both sentences.")]
    rows, msgs = [], []
    for m in models:
        try:
            d = word_tokens(m, word, (s1, s2), model_stamp(m))
        except Exception as e:  # one broken model must not hide the others
            msgs.append((f"{m} 出错：{e}", f"{m} failed: {e}"))
            continue
        if not d["in_vocab"] and m == "word2vec":
            msgs.append((f"word2vec 的词表里没有“{word}”：它对没见过的词没有向量。ELMo 从字符构造向量。",
                         f"'{word}' is not in word2vec's vocabulary: it has no vector for an unseen word. ELMo builds one from characters."))
            continue
        for j, name in enumerate(d["layer_names"]):
            rows.append((m, name, ctxlib.cosine(d["vecs"][0, j], d["vecs"][1, j])))
    return rows, msgs


def _pick(summary: dict, *keys):
    for k in keys:
        if k in summary and summary[k] not in (None, ""):
            return summary[k]
    return None


def _fmt(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:,.4g}" if abs(v) < 1e4 else f"{v:,.0f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else (f"{seconds / 60:.0f} min" if seconds < 7200 else f"{seconds / 3600:.1f} h")


def model_rows(status: dict[str, str | None]) -> list[dict]:
    """One row per standard model: loaded or not, size, and the training record from config.json's summary."""
    rows = []
    for m, err in status.items():
        if err is not None:
            rows.append({t("模型", "model"): m, t("状态", "status"): t("未找到：", "missing: ") + checkpoint.rebuild_command(m)})
            continue
        enc = load_encoder(m)
        s = enc.summary or {}
        flat = {}
        for k, v in s.items():  # one level of nesting: {"perplexity": {"forward": ...}} -> perplexity.forward
            flat.update({f"{k}.{k2}": v2 for k2, v2 in v.items()} if isinstance(v, dict) else {k: v})
        val = {k: v for k, v in flat.items() if isinstance(v, (int, float)) and not isinstance(v, bool) and any(
            x in k.lower() for x in ("val", "ppl", "perplexity.f", "perplexity.b", "acc", "agree", "mlm", "nsp", "loss"))}
        wall = _pick(s, "wall_s", "wall_time_s", "wall_time", "seconds")
        rows.append({
            t("模型", "model"): m, t("状态", "status"): t("已加载", "loaded"),
            t("层", "layers"): len(enc.layer_names), t("维度", "dim"): enc.dim,
            t("训练步数", "steps"): _fmt(_pick(s, "steps", "step", "updates")),
            t("见过的词/字数", "tokens seen"): _fmt(_pick(s, "tokens_seen", "tokens", "words_seen", "words")),
            t("设备", "device"): _fmt(_pick(s, "device")),
            t("训练用时", "wall time"): (_duration(wall) if isinstance(wall, (int, float)) else _fmt(wall)),
            t("验证指标", "validation"): "; ".join(f"{k}={_fmt(v)}" for k, v in list(val.items())[:4]),
        })
    return rows


PAGE_LABELS = {"Type_vs_token": ("类型与实例", "Type vs token"), "Polysemy_atlas": ("多义词图谱", "Polysemy atlas"),
               "ELMo_layers": ("ELMo 的各层", "ELMo layers"), "BERT_attention": ("BERT 的注意力", "BERT attention"),
               "BERT_pretraining": ("BERT 的预训练", "BERT pretraining")}


def page_label(stem: str) -> str:
    """'1_Type_vs_token' -> the page's name in the current language."""
    name = stem.split("_", 1)[1] if stem[:1].isdigit() and "_" in stem else stem
    zh, en = PAGE_LABELS.get(name, (name.replace("_", " "), name.replace("_", " ")))
    return t(zh, en)


def qp_choice(key: str, param: str, options: list[str]) -> str:
    """Like qp_init for a radio/select: the query parameter is used only if it is one of `options`."""
    if key not in st.session_state:
        v = st.query_params.get(param)
        st.session_state[key] = v if v in options else options[0]
    return st.session_state[key]


def model_radio(key: str) -> str | None:
    """Sidebar radio of the loadable models (missing ones greyed out with their build command); ?model=..."""
    status = model_status()
    ok = [m for m in MODEL_ORDER if status[m] is None]
    if not ok:
        st.warning(t("还没有可用的模型。先训练一个：`python -m ctxlib train word2vec`（几分钟）。",
                     "No model is available yet. Train one first: `python -m ctxlib train word2vec` (a few minutes)."))
        return None
    wkey = f"{key}_model"
    if wkey not in st.session_state or st.session_state[wkey] not in ok:
        qp = st.query_params.get("model")
        st.session_state[wkey] = qp if qp in ok else ok[-1]
    chosen = st.sidebar.radio(t("模型", "Model"), ok, key=wkey)
    for m in MODEL_ORDER:
        if status[m] is not None:
            st.sidebar.caption(t(f"~~{m}~~ 不可用。构建命令：", f"~~{m}~~ not available. Build it with:") +
                               f" `{checkpoint.rebuild_command(m)}`")
    return chosen


def atlas_csv(d: dict, layer: int, cats: list[str]) -> bytes:
    """CSV of the atlas at one layer: sentence, tag, source, colour category, vector."""
    import csv
    import io

    buf = io.StringIO()
    w = csv.writer(buf)
    X = d["vecs"][:, layer]
    w.writerow(["sentence", "start", "end", "pos_tag", "source", "category", "layer_name"] + [f"d{k}" for k in range(X.shape[1])])
    for i, s in enumerate(d["texts"]):
        w.writerow([s, *d["spans"][i], d["tags"][i] or "", d["sources"][i], cats[i], d["layer_names"][layer]]
                   + [f"{x:.6g}" for x in X[i]])
    return buf.getvalue().encode("utf-8-sig")


@st.cache_resource(show_spinner=False)
def prewarm_corpus():
    """Load the corpus once per server in a background thread, so the atlas's first visit does not wait ~10 s.

    Off when CTXLAB_NO_PREWARM is set (tests)."""
    import os
    import threading

    if os.environ.get("CTXLAB_NO_PREWARM"):
        return None
    from . import corpus

    th = threading.Thread(target=corpus.load, args=("all",), daemon=True, name="ctxlab-corpus-prewarm")
    th.start()
    return th


def flag_param(key: str, param: str) -> None:
    """on_change callback: mirror a toggle/checkbox into a query parameter ("1" or absent)."""
    if st.session_state.get(key):
        st.query_params[param] = "1"
    elif param in st.query_params:
        del st.query_params[param]


@st.cache_resource(show_spinner=False, max_entries=512)
def _figure_cache(key: str, _build):
    return _build()


def cached_figure(key: str, build):
    """`build()` once per `key` (a string naming everything the figure shows, language included).

    Building Plotly figures (validation) is most of a warm rerun's time; st.plotly_chart does not mutate them."""
    return _figure_cache(f"{lang()}|{key}", build)


def segmentation_table(data: dict, texts, sentence_col: str, pooled_col: str) -> dict[str, list[str]]:
    """Columns for the segmentation table: models with identical segmentations share a column
    ("word2vec / elmo"); character models get an extra column with the characters pooled into the word."""
    cols: dict[str, list[str]] = {sentence_col: list(texts)}
    groups: dict[tuple, list[str]] = {}
    for m, d in data.items():
        groups.setdefault(tuple(d["segmentation"]), []).append(m)
    for seg, ms in groups.items():
        cols[" / ".join(ms)] = list(seg)
    for m, d in data.items():
        if not d.get("word_level", True):
            cols[f"{m}: {pooled_col}"] = [" + ".join(p) for p in d["pooled"]]
    return cols


PAGE_HINTS = {
    "Type_vs_token": ("一个词在多个句子里：word2vec 一个点，ELMo/BERT 每句一个点；哪一层最能分开词义。",
                      "One word in many sentences: one point for word2vec, one per sentence for ELMo/BERT; which layer separates senses."),
    "Polysemy_atlas": ("语料中一个词的所有实例：按词性、来源或聚类着色；自相似度与各向异性基线。",
                       "Every corpus occurrence of a word, coloured by POS, source or cluster; self-similarity vs the anisotropy baseline."),
}


def _trim(obj, n: int = 12):
    """Long lists (loss histories) shortened for display."""
    if isinstance(obj, dict):
        return {k: _trim(v, n) for k, v in obj.items()}
    if isinstance(obj, list) and len(obj) > n:
        return [_trim(v, n) for v in obj[:n // 2]] + [f"… {len(obj) - n} more …"] + [_trim(v, n) for v in obj[-(n // 2):]]
    return obj


def model_record(name: str) -> dict:
    """config.json's config and summary of a loaded model, long lists trimmed."""
    enc = load_encoder(name)
    return _trim({"kind": enc.kind, "layers": list(enc.layer_names), "config": enc.config, "summary": enc.summary})


def qp_int(key: str, param: str, default: int, lo: int, hi: int, options: list[int] | None = None) -> int:
    """Session-state int for widget `key`: from query parameter `param` on the first run, always clamped to
    [lo, hi] (and snapped to `options`), so a stale value (e.g. a layer of another model) never breaks the widget."""
    v = st.session_state.get(key)
    if v is None:
        raw = st.query_params.get(param, "")
        v = int(raw) if raw.lstrip("-").isdigit() else default
    v = max(lo, min(hi, int(v)))
    if options:
        v = min(options, key=lambda o: abs(o - v))
    st.session_state[key] = v
    return v


def share_hint() -> None:
    """Sidebar note: the URL holds the page's settings (word, sentences, models, layer, projection, language)."""
    st.sidebar.caption(t("地址栏里的链接保存了当前的词、句子、模型、层、投影和语言：复制它，别人打开就是同一个画面。",
                         "The address bar holds the word, sentences, models, layer, projection and language: "
                         "copy it and others open the same view."))

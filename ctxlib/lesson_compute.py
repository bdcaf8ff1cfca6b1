"""The lesson's live views: each step kind run on real encoders (or on the checkpoints' eval files), returning plain
data for the page and for `lesson_facts` (the values a step's answer text names). `compute` is reached through
`ctxlib.lesson_compute.compute`."""

from __future__ import annotations

import re

from . import kinds
from .lesson import KINDS, TOPK, LessonError, Step

EXAMPLE_SEARCH = 300  # seeds tried after a step's own seed when looking for a clean, correctly classified pair
_NOT_CLEAN = re.compile(r"[A-Za-z0-9０-９Ａ-Ｚａ-ｚ]|([^\w\s])\1")  # Latin letters, digits, "。。。" / "!!" runs
_CJK = re.compile(r"[\u4e00-\u9fff]")
_ENDS = tuple("，。！？；：,.!?;:")
MIN_CJK = 8  # Chinese characters each of A and B must have


def compute(step: Step, load_model, paragraphs=None) -> dict:
    """Run `step`'s view. `load_model(name)` returns an encoder (or raises); `paragraphs()` returns corpus
    paragraphs (mlm_example only). Returns plain data; a model that cannot do what the step asks raises LessonError."""
    p = step.params
    fn = _VIEWS.get(step.kind)
    if fn is None:
        raise LessonError("unknown_kind", kind=step.kind, kinds=", ".join(KINDS))
    return fn(p, load_model, paragraphs)


def english_models(load_model) -> list[str]:
    """The registered models (CTXLAB_MODELS, models.toml) that load and read English, in their order."""
    from .registered import extra_models

    out = []
    for e in extra_models():
        try:
            if getattr(load_model(e.name), "language", "zh") == "en":
                out.append(e.name)
        except Exception:  # noqa: BLE001 - a model that does not load is not offered
            continue
    return out


def expand_models(models, load_model) -> list[str]:
    """A step's models with lesson.ENGLISH replaced by the registered English models."""
    from .lesson import ENGLISH

    out = []
    for m in models:
        out += english_models(load_model) if m == ENGLISH else [m]
    return out


def _cosine(p: dict, load_model, _=None) -> dict:
    """The word's vector in sentence 1 against sentences 2..n, per model at its top layer (and whether word2vec
    knows the word: an unknown word gets a zero vector, which says nothing)."""
    from .explore import word_profile
    from .vecmath import cosine

    rows, oov, failed = [], [], []
    for m in expand_models(p.get("models") or kinds.names(shipped=True), load_model):
        try:
            enc = load_model(m)
        except Exception as e:  # noqa: BLE001 - a missing model leaves the others
            failed.append((m, str(e)))
            continue
        prof = word_profile(enc, p["sentences"], p["word"])
        if not prof.in_vocab and m == "word2vec":
            oov.append(m)
            continue
        top = prof.vecs[:, -1, :]
        rows.append((m, prof.layer_names[-1], [cosine(top[0], top[i]) for i in range(1, len(top))]))
    return {"rows": rows, "oov": oov, "failed": failed}


def _fill_mask(p: dict, load_model, _=None) -> dict:
    """Top-5 per [MASK]; with `answer` (one character per [MASK]), its rank and probability at each."""
    answer = p.get("answer")
    full = load_model("bert").fill_mask(p["text"], topk=100_000)  # the whole vocabulary: the answer's rank is known
    out = {"masks": [{"index": r["index"], "candidates": r["candidates"][:TOPK]} for r in full], "answer": []}
    for k, r in enumerate(full):
        want = answer[k] if answer and k < len(answer) else None
        rank = next((i + 1 for i, (t, _) in enumerate(r["candidates"]) if t == want), None) if want else None
        prob = r["candidates"][rank - 1][1] if rank else None
        out["answer"].append({"char": want, "rank": rank, "prob": prob})
    return out


def _elmo_lm(p: dict, load_model, _=None) -> dict:
    """Both LMs' top 20 at the word, and (lm_topk's "actual") the word's rank in each LM's full distribution."""
    enc = load_model("elmo")
    toks = enc.encode([p["text"]], target=p["word"])[0].tokens
    index = toks.index(p["word"]) if p["word"] in toks else 0
    return {"index": index, **enc.lm_topk(p["text"], index, k=20, target=p["word"])}


def _elmo_mix(p: dict, load_model, _=None) -> dict:
    from .records import read_evals

    enc = load_model("elmo")
    evals, missing = read_evals(getattr(enc, "path", None), ("pos", "ner", "sentiment"))
    return {"evals": evals, "missing": missing, "n_layers": len(enc.layer_names)}


def clean_pair(a: str, b: str) -> bool:
    """An everyday-looking NSP pair: no Latin letters, digits or runs of punctuation, each part at least MIN_CJK
    Chinese characters and ending at a punctuation mark (not cut mid-clause)."""
    return (
        not _NOT_CLEAN.search(a + b)
        and all(len(_CJK.findall(t)) >= MIN_CJK for t in (a, b))
        and a.endswith(_ENDS)
        and b.endswith(_ENDS)
    )


def clean_example(enc, paragraphs, seed0: int = 0, search: int = EXAMPLE_SEARCH) -> dict:
    """The first pre-training example from seed `seed0` on (at most `search` more) that is a clean pair
    (clean_pair) which BERT's NSP head classifies right (P(IsNext) >= 0.5 exactly when B follows A). None found: the
    example of `seed0`, marked "found": False. Returns {example, p_next, seed, found}; `paragraphs` is the list of
    corpus paragraphs (the lesson's 80/10/10 step and the pre-training page's opening sample share it)."""
    from .training.bert_data import make_example

    first = None
    for seed in range(seed0, seed0 + search + 1):
        ex = make_example(seed, enc.tokenizer, paragraphs, max_len=min(64, enc.max_len))
        if first is None:
            first = (seed, ex)
        if not clean_pair(ex["a_text"], ex["b_text"]):
            continue
        p_next = enc.next_sentence(ex["a_text"], ex["b_text"])
        if (p_next >= 0.5) == bool(ex["is_next"]):
            return {"example": ex, "p_next": p_next, "seed": seed, "found": True}
    seed, ex = first
    return {"example": ex, "p_next": enc.next_sentence(ex["a_text"], ex["b_text"]), "seed": seed, "found": False}


def _mlm_example(p: dict, load_model, paragraphs) -> dict:
    """clean_example from the step's seed (its answer's {verdict} says whether BERT got it right)."""
    return clean_example(load_model("bert"), paragraphs(), int(p.get("seed", 0)))


def _nsp(p: dict, load_model, _=None) -> dict:
    enc = load_model("bert")
    return {"ab": enc.next_sentence(p["a"], p["b"]), "ba": enc.next_sentence(p["b"], p["a"])}


def _attention(p: dict, load_model, _=None) -> dict:
    m = p.get("model", "bert")
    e = load_model(m).encode([p["text"]])[0]
    if e.attentions is None:
        raise LessonError("bad_model", model=m, models=", ".join(kinds.names(shipped=True, view="attention")))
    n_layers, n_heads = e.attentions.shape[:2]
    layer, head = p.get("layer", n_layers), p.get("head", 1)
    if not 1 <= layer <= n_layers:
        raise LessonError("bad_number", field="layer", lo=1, hi=n_layers)
    if not 1 <= head <= n_heads:
        raise LessonError("bad_number", field="head", lo=1, hi=n_heads)
    att = e.attentions[layer - 1, head - 1]
    return {
        "model": m,
        "tokens": list(e.tokens),
        "att": att,
        "layer": layer,
        "head": head,
        "n_layers": n_layers,
        "n_heads": n_heads,
    }


def _next_char(p: dict, load_model, _=None) -> dict:
    """GPT's top TOPK next characters; with `answer`, that character's rank and probability in the full distribution."""
    gpt = load_model("gpt")
    out = {"candidates": gpt.next_char(p["prompt"], TOPK)}
    if p.get("answer"):
        out["answer"] = gpt.char_rank(p["prompt"], p["answer"])
    return out


def _unseen_word(p: dict, load_model, _=None) -> dict:
    """A word in a sentence: whether word2vec has a vector for it (an OutOfVocabulary error when not), whether it is
    in ELMo's word (output) vocabulary, and ELMo's vector for it (built from its characters) with the vocabulary words
    nearest to it at every layer."""
    from .encoder import OutOfVocabulary

    word, text = p["word"], p["sentence"]
    w2v = load_model("word2vec")
    w2v_error = None if w2v.in_vocab(word) else str(OutOfVocabulary(word, "word2vec"))
    elmo = load_model("elmo")
    vecs = elmo.word_vectors([text], word)[0]  # (L, D)
    nearest = [elmo.nearest_words(vecs[j], j, topn=6, exclude=(word,)) for j in range(vecs.shape[0])]
    return {
        "w2v_known": w2v_error is None,
        "w2v_error": w2v_error,
        "elmo_known": elmo.known(word),
        "layer_names": list(elmo.layer_names),
        "norms": [float((v**2).sum() ** 0.5) for v in vecs],
        "vector": vecs[0][:8].tolist(),
        "dim": int(vecs.shape[1]),
        "nearest": nearest,
    }


def _eval_files(p: dict, load_model, _=None) -> dict:
    """The shipped eval figures the transfer steps show: BERT and ELMo sentiment (fine-tuning vs frozen features)
    and ELMo's task-model uses on every task (no input vectors, word2vec, ELMo as input, ELMo concatenated)."""
    from .evaluation import finetune_live as fl
    from .records import read_evals

    paths = {m: getattr(load_model(m), "path", None) for m in ("bert", "elmo")}
    sent = {m: read_evals(paths[m], ["sentiment"])[0].get("sentiment") for m in paths}
    elmo_evals, missing = read_evals(paths["elmo"], ("pos", "ner", "sentiment"))
    return {
        "full": fl.full_size_rows(sent["bert"], sent["elmo"]),
        "recipe": fl.finetune_recipe(sent["bert"]),
        "elmo_evals": elmo_evals,
        "missing": missing,
    }


def _cove(p: dict, load_model, _=None) -> dict:
    return {}  # a schematic: no model of this app computes anything for it


def _positions(p: dict, load_model, _=None) -> dict:
    """The model's position scheme (from its config) and a repeated character's two layer-0 vectors, measured
    (ctxlib.mechanics): identical under rotary positions, different under learned absolute ones."""
    from . import mechanics

    m = p.get("model", "bert")
    enc = load_model(m)
    rep = mechanics.repeated_char_check(enc, p["text"])  # MechanicsInputError (a ValueError): the page says so
    return {"model": m, "scheme": mechanics.position_scheme(enc.model.cfg)["scheme"], **rep}


_VIEWS = {
    "positions": _positions,
    "cosine": _cosine,
    "fill_mask": _fill_mask,
    "elmo_lm": _elmo_lm,
    "elmo_mix": _elmo_mix,
    "mlm_example": _mlm_example,
    "nsp": _nsp,
    "attention": _attention,
    "next_char": _next_char,
    "unseen_word": _unseen_word,
    "finetune": _eval_files,
    "taglm": _eval_files,
    "cove": _cove,
}

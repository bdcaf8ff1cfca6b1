"""The values a lesson step's answer text may name: `{top}` in "the model's top guess is {top}" is filled from the
model's own output on reveal, so an answer cannot claim what the model does not say.

`names(kind, params)` lists the placeholders a step may use (the lesson parser refuses others), `facts(step, data,
words)` computes them from `lesson_compute.compute`'s data, `fill(text, facts)` puts them in. Numbers are language-neutral;
the few words a fact may be (a verdict such as "right" / "wrong", the token layer's name) come from `words`, which
the app takes from its catalogue (lesson.fact.*); WORDS holds the English ones.
"""

from __future__ import annotations

import re

from . import kinds

# a placeholder: {name}, not preceded by an ASCII letter or digit, a backslash, ^ or _ (so LaTeX's \mathrm{x} and _{k}
# stay text); a Chinese character before it is fine (与{best})
PLACEHOLDER = re.compile(r"(?<![\\A-Za-z0-9^_]){([a-z][a-z0-9_]*)}")
WORDS = {
    "right": "which is right",
    "wrong": "which is wrong",
    "same": "about the same (within 0.05)",
    "lower": "clearly lower",
    "higher": "clearly higher",
    "none": "no model",
    "token_layer": "the token layer",
    "oov": "has no vector for it: the word is not in its vocabulary",
    "known": "has a vector for it: the word is in its vocabulary",
    "elmo_oov": "is not in ELMo's word vocabulary either",
    "elmo_known": "is in ELMo's word vocabulary",
}
MISSING = "?"  # a fact the data lacks (a model or eval file missing)
TASKS = ("pos", "ner", "sentiment")
FULL_KEYS = (
    "bert_finetuned",
    "bert_input",
    "bert_probe",
    "elmo_input",
    "elmo_concat",
    "elmo_probe",
    "w2v_input",
    "w2v_probe",
)
USAGE = {"base": "baseline_score", "w2v": "word2vec_score", "input": "input_score", "concat": "concat_score"}
SAME = 0.05  # NSP: a swap that moves P(IsNext) by less than this leaves it "about the same"
CLOSER = 0.01  # cosine: a pair counts as closer by at least this much


def label(model: str) -> str:
    """A model's name in an answer, as the pages write it (ELMo, BERT, GPT; word2vec and others as they are)."""
    from .viz.pretraining import MODEL_NAMES

    return MODEL_NAMES.get(model, model)


def names(kind: str, params: dict) -> tuple[str, ...]:
    """The placeholders a step of `kind` with `params` may use in its answer."""
    if kind == "cosine":
        models = params.get("models") or kinds.names(shipped=True)
        n = len(params.get("sentences") or [])
        out = [f"{m}_{j}" for m in models for j in range(2, n + 1)]
        return tuple(out + (["closer"] if n >= 3 else []))
    if kind == "fill_mask":
        return ("top", "top_p") + (("answer", "rank", "p") if params.get("answer") else ())
    if kind == "next_char":
        return ("top", "top_p") + (("answer", "rank", "p") if params.get("answer") else ())
    return {
        "elmo_lm": ("word", "fwd_top", "fwd_top_p", "fwd_rank", "fwd_p", "bwd_top", "bwd_top_p", "bwd_rank", "bwd_p"),
        "elmo_mix": tuple(f"{t}_{k}" for t in TASKS for k in ("top", "top_w", "gamma")),
        "mlm_example": ("seed", "chosen", "n_mask", "n_random", "n_kept", "label", "p_next", "verdict"),
        "nsp": ("ab", "ba", "order"),
        "attention": ("next_rows", "rows"),
        "unseen_word": ("word", "w2v", "elmo_vocab", "dim", "token_near", "token_cos", "top_near", "top_cos"),
        "finetune": FULL_KEYS + ("head", "epochs", "spread"),
        "taglm": tuple(f"{t}_{k}" for t in TASKS for k in USAGE),
    }.get(kind, ())


def fill(text: str, facts: dict[str, str]) -> str:
    """`text` with each placeholder replaced by its fact (MISSING when the data has none); other braces kept."""
    return PLACEHOLDER.sub(lambda m: facts.get(m.group(1), MISSING), text)


def used(text: str) -> list[str]:
    """The placeholders `text` uses, in order."""
    return PLACEHOLDER.findall(text)


def pct(p) -> str:
    """A probability as the charts show it: 26.1%, a small one with two decimals (0.07%)."""
    if p is None:
        return MISSING
    p = float(p)
    return f"{p:.1%}" if p >= 0.01 else (f"{p:.2%}" if p >= 0.0001 else "<0.01%")


def _num(x, nd: int = 2) -> str:
    return MISSING if x is None else f"{float(x):.{nd}f}"


def facts(step, data: dict, words: dict[str, str] | None = None) -> dict[str, str]:
    """The step's facts (names(...)) from its computed `data`, each a short string; `words` for the verdicts."""
    w = {**WORDS, **(words or {})}
    fn = globals().get(f"_f_{step.kind}")
    return fn(step.params, data, w) if fn else {}


def _f_cosine(p, d, w):
    out = {f"{m}_{j}": _num(c) for m, _, cs in d["rows"] for j, c in enumerate(cs, 2)}
    if len(p["sentences"]) >= 3:
        closer = [label(m) for m, _, cs in d["rows"] if all(cs[0] >= c + CLOSER for c in cs[1:])]
        out["closer"] = ", ".join(closer) or w["none"]
    return out


def _top_and_answer(cands, ans) -> dict:
    out = {"top": cands[0][0], "top_p": pct(cands[0][1])} if cands else {}
    if ans and ans.get("char", ans.get("token")):
        out.update(
            answer=ans.get("char", ans.get("token")),
            rank=str(ans["rank"]) if ans["rank"] else MISSING,
            p=pct(ans["prob"]),
        )
    return out


def _f_fill_mask(p, d, w):
    return _top_and_answer(d["masks"][0]["candidates"], d["answer"][0] if d["answer"] else None)


def _f_next_char(p, d, w):
    return _top_and_answer(d["candidates"], d.get("answer"))


def _f_elmo_lm(p, d, w):
    from .viz.elmo import lm_panels

    fwd, bwd, _, _ = lm_panels(d, d["tokens"], d["index"], k=5)  # what the chart shows, first on top
    act = d.get("actual") or {}
    out = {"word": p["word"]}
    for key, items, name in (("fwd", fwd, "forward"), ("bwd", bwd, "backward")):
        out[f"{key}_top"], out[f"{key}_top_p"] = (items[0][0], pct(items[0][1])) if items else (MISSING, MISSING)
        rank = (act.get("rank") or {}).get(name) if act.get("word") not in (None, "<unk>") else None
        out[f"{key}_rank"], out[f"{key}_p"] = (str(rank), pct(act.get(name))) if rank else (MISSING, MISSING)
    return out


def _f_elmo_mix(p, d, w):
    layers = [w["token_layer"]] + [f"biLSTM {j}" for j in range(1, d["n_layers"])]
    out = {}
    for t, ev in d["evals"].items():
        wts = [float(x) for x in ev.mix_weights or []]
        if wts:
            j = max(range(len(wts)), key=wts.__getitem__)
            out.update({f"{t}_top": layers[j] if j < len(layers) else str(j), f"{t}_top_w": _num(wts[j])})
        out[f"{t}_gamma"] = _num(ev.gamma)
    return out


def _f_mlm_example(p, d, w):
    from .viz.pretraining import example_counts

    ex, c = d["example"], example_counts(d["example"])
    right = (d["p_next"] >= 0.5) == bool(ex["is_next"])
    return {
        "seed": str(d["seed"]),
        "chosen": str(c["chosen"]),
        "n_mask": str(c["mask"]),
        "n_random": str(c["random"]),
        "n_kept": str(c["kept"]),
        "label": "IsNext" if ex["is_next"] else "NotNext",
        "p_next": _num(d["p_next"]),
        "verdict": w["right" if right else "wrong"],
    }


def _f_nsp(p, d, w):
    diff = d["ba"] - d["ab"]
    order = "same" if abs(diff) < SAME else ("lower" if diff < 0 else "higher")
    return {"ab": _num(d["ab"]), "ba": _num(d["ba"]), "order": w[order]}


def _f_attention(p, d, w):
    att, toks = d["att"], d["tokens"]
    rows = range(len(toks) - 1)  # the last token has no next one
    return {"rows": str(len(rows)), "next_rows": str(sum(int(att[i].argmax()) == i + 1 for i in rows))}


def _f_unseen_word(p, d, w):
    near = d["nearest"]
    return {
        "word": p["word"],
        "w2v": w["known" if d["w2v_known"] else "oov"],
        "elmo_vocab": w["elmo_known" if d["elmo_known"] else "elmo_oov"],
        "dim": str(d["dim"]),
        "token_near": near[0][0][0] if near[0] else MISSING,
        "token_cos": _num(near[0][0][1]) if near[0] else MISSING,
        "top_near": near[-1][0][0] if near[-1] else MISSING,
        "top_cos": _num(near[-1][0][1]) if near[-1] else MISSING,
    }


def _f_finetune(p, d, w):
    full = {k: v for k, v, _ in d["full"]}
    out = {k: _num(full.get(k), 3) for k in FULL_KEYS}
    main = [full[k] for k in ("bert_finetuned", "bert_input", "elmo_input") if k in full]
    out["spread"] = f"{(max(main) - min(main)) * 100:.1f}" if len(main) > 1 else MISSING
    r = d.get("recipe") or {}
    out.update(head=str(r.get("head", MISSING)), epochs=str(r.get("epochs", MISSING)))
    return out


def _f_taglm(p, d, w):
    ev = d["elmo_evals"]
    return {
        f"{t}_{k}": _num(getattr(ev[t], attr), 3) if t in ev else MISSING for t in TASKS for k, attr in USAGE.items()
    }


# -- a step's live job (the fine-tuning step's run in the app's job line) ----------------------------------------
# Its answer (a step's `live_answer`, else the app's default text) names the finished run's own figures.
LIVE_NAMES = {
    "finetune": (
        "acc",
        "bert_cls",
        "elmo",
        "word2vec",
        "majority",
        "n_train",
        "n_test",
        "steps",
        "seconds",
        "best",
        "lead",
        "verdict",
    )
}
LIVE_WORDS = {  # English; the app's catalogue has them under lesson_live.fact.*
    "ahead": "ahead of every frozen-feature probe",
    "behind": "not ahead of the best frozen-feature probe",
    "bert_cls": "frozen BERT's [CLS] probe",
    "elmo": "frozen ELMo's probe",
    "word2vec": "word2vec's probe",
    "no_baseline": "no frozen-feature probe (no model for one)",
}
BASELINES = ("bert_cls", "elmo", "word2vec")


def live_names(kind: str) -> tuple[str, ...]:
    """The placeholders a step of `kind` may use in its live answer (none: the kind has no live job)."""
    return LIVE_NAMES.get(kind, ())


def live_facts(kind: str, result: dict, words: dict[str, str] | None = None) -> dict[str, str]:
    """The live answer's facts from a finished job's result (ctxlib.evaluation.finetune_live.run's dict): the
    fine-tuned accuracy, each frozen probe's on the same reviews, the best probe, the lead over it in points (signed)
    and the verdict (ahead of every probe, or not)."""
    if kind != "finetune":
        return {}
    w = {**LIVE_WORDS, **(words or {})}
    acc, base = float(result["accuracy"]), result.get("baselines") or {}
    out = {k: _num(base.get(k), 3) for k in BASELINES}
    out.update(
        acc=_num(acc, 3),
        majority=_num(result.get("majority"), 3),
        n_train=str(result["n_train"]),
        n_test=str(result["n_test"]),
        steps=str(len(result.get("history") or [])),
        seconds=str(result["seconds"]),  # rounded to 0.1 s by the run
    )
    have = [(float(base[k]), k) for k in BASELINES if base.get(k) is not None]
    if not have:
        return {**out, "best": w["no_baseline"], "lead": MISSING, "verdict": MISSING}
    best, name = max(have)
    out.update(best=w[name], lead=f"{(acc - best) * 100:+.1f}", verdict=w["ahead" if acc > best else "behind"])
    return out

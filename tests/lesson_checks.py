"""Checks of one revealed lesson step against the shipped models, computed here without ctxlib.lesson_compute: the
answer names what the model really says (its top guess, the true word's rank, the cosines, the eval figures), the
charts show it, and the claims the shipped answers make in words hold for the shipped models."""

import json
import re

import numpy as np

from ctxlib import checkpoint, kinds, lesson_compute, lesson_facts, records
from ctxlib.app import i18n
from ctxlib.evaluation import finetune_live as fl
from ctxlib.training.bert_data import make_example
from ctxlib.vecmath import cosine
from ctxlib.viz.elmo import LM_SPECIALS


def _en(msg_id, **values):
    return i18n.lookup(msg_id, "en", **values)


def _has(answer: str, *values: str) -> None:
    """Each value is in the answer as the student reads it (Markdown escapes undone)."""
    plain = re.sub(r"\\(.)", r"\1", answer)
    for v in values:
        assert v in plain, (v, plain)


def _pct(p):
    return lesson_facts.pct(p)


def _labels(spec) -> list[str]:
    """Every bar label (y of horizontal bars) of a chart spec."""
    return [str(y).strip() for tr in spec["data"] for y in (tr.get("y") or [])]


def cosine_step(step, at, answer, load, specs):
    p = step.params
    models = p.get("models") or kinds.names(shipped=True)
    closer = []
    for m in models:
        top = load(m).word_vectors(p["sentences"], p["word"])[:, -1, :]  # (n, D)
        cs = [cosine(top[0], top[j]) for j in range(1, len(top))]
        _has(answer, *(f"{c:.2f}" for c in cs))
        if m == "word2vec":
            assert cs == [cs[0]] * len(cs) and abs(cs[0] - 1) < 1e-5  # one vector, however the word is used
        else:
            assert max(cs) < 0.999, (m, cs)  # a vector per occurrence
        if all(cs[0] >= c + lesson_facts.CLOSER for c in cs[1:]):
            closer.append(lesson_facts.label(m))
    if "{closer}" in step.text("answer", "en"):
        _has(answer, ", ".join(closer) or lesson_facts.WORDS["none"])
        # the shipped answers go on to say the vector follows the context: every contextual model must separate
        assert closer == [lesson_facts.label(m) for m in models if m != "word2vec"], closer
    bars = [y for tr in specs[0]["data"] for y in tr["y"]]
    assert any(abs(b - 1) < 1e-5 for b in bars[: len(p["sentences"]) - 1])  # word2vec's bars, first


def unseen_word_step(step, at, answer, load, specs):
    word, text = step.params["word"], step.params["sentence"]
    assert not load("word2vec").in_vocab(word)  # the answer says word2vec has no vector
    _has(answer, lesson_facts.WORDS["oov"])
    assert any("OutOfVocabulary" in e.value for e in at.error)
    elmo = load("elmo")
    v = elmo.word_vectors([text], word)[0]
    near = elmo.nearest_words(v[0], 0, topn=1, exclude=(word,))[0]
    _has(answer, near[0], f"{near[1]:.2f}", str(v.shape[1]))
    assert near[0] in at.table[0].value.iloc[0, 1]


def elmo_lm_step(step, at, answer, load, specs):
    p = step.params
    elmo = load("elmo")
    toks = elmo.encode([p["text"]], target=p["word"])[0].tokens
    lm = elmo.lm_topk(p["text"], toks.index(p["word"]), k=20, target=p["word"])
    ranks = lm["actual"]["rank"]
    labels = _labels(specs[0])
    for name, key in (("forward", "fwd"), ("backward", "bwd")):
        top = next(w for w, _ in lm[name] if w not in LM_SPECIALS)
        _has(answer, top, f"{ranks[name]}")
        in_top5 = p["word"] in [w for w, _ in lm[name] if w not in LM_SPECIALS][:5]
        want = p["word"] if in_top5 else _en("pretraining.lm.rank", token=p["word"], rank=ranks[name])
        assert want in labels, (want, labels)  # the chart shows the true word, ranked, in both panels
    assert ranks["backward"] > ranks["forward"]  # "from the right side alone the place is hard to guess"


def elmo_mix_step(step, at, answer, load, specs):
    evals, _ = records.read_evals(checkpoint.resolve("elmo"), ("pos", "ner", "sentiment"))
    top = {t: int(np.argmax(ev.mix_weights)) for t, ev in evals.items()}
    names = [lesson_facts.WORDS["token_layer"]] + [f"biLSTM {j}" for j in range(1, len(evals["pos"].mix_weights))]
    for t, j in top.items():
        _has(answer, f"{names[j]} ({evals[t].mix_weights[j]:.2f})")
    assert top["pos"] < top["sentiment"]  # "POS leaning lower and sentiment higher"


def taglm_step(step, at, answer, load, specs):
    evals, _ = records.read_evals(checkpoint.resolve("elmo"), ("pos", "ner", "sentiment"))
    for ev in evals.values():
        _has(answer, *(f"{getattr(ev, a):.3f}" for a in lesson_facts.USAGE.values()))
        assert ev.input_score > ev.word2vec_score and ev.concat_score <= ev.input_score  # the answer's two claims
    shown = {round(x, 4) for tr in specs[1]["data"] for x in tr["y"] if x is not None}
    assert {round(evals["pos"].input_score, 4), round(evals["ner"].concat_score, 4)} <= shown


def cove_step(step, at, answer, load, specs):
    assert not re.search(r"\d\.\d", answer)  # no measured figure: there is no CoVe model here
    assert any("Schematic" in c.value for c in at.caption)
    spec = json.dumps(specs[0], ensure_ascii=False)
    assert _en("finetune.cove_fig.not_here") in spec and '"type": "bar"' not in spec


def fill_mask_step(step, at, answer, load, specs):
    cands = load("bert").fill_mask(step.params["text"], topk=100_000)[0]["candidates"]
    chars = [c for c, _ in cands]
    want = step.params["answer"]
    _has(answer, f"{cands[0][0]} ({_pct(cands[0][1])})", f"{want} is ranked {chars.index(want) + 1}")
    assert cands[0][0] in _labels(specs[0])


def mlm_example_step(step, at, answer, load, specs, paragraphs):
    bert = load("bert")
    found = [c.value for c in at.caption if c.value.startswith("Picked by a fixed search")]
    seed = int(re.search(r"\(seed (\d+)\)", found[0]).group(1)) if found else int(step.params.get("seed", 0))
    ex = make_example(seed, bert.tokenizer, paragraphs, max_len=min(64, bert.max_len))
    p = bert.next_sentence(ex["a_text"], ex["b_text"])
    right = (p >= 0.5) == ex["is_next"]
    if found:
        assert right and lesson_compute.clean_pair(ex["a_text"], ex["b_text"]), (seed, ex["a_text"], ex["b_text"])
    _has(
        answer, f"{p:.2f}", "IsNext" if ex["is_next"] else "NotNext", lesson_facts.WORDS["right" if right else "wrong"]
    )


def nsp_step(step, at, answer, load, specs):
    bert, a, b = load("bert"), step.params["a"], step.params["b"]
    ab, ba = bert.next_sentence(a, b), bert.next_sentence(b, a)
    assert [m.value for m in at.metric] == [f"{ab:.2f}", f"{ba:.2f}"]
    order = "same" if abs(ba - ab) < lesson_facts.SAME else ("lower" if ba < ab else "higher")
    _has(answer, f"{ab:.2f}", f"{ba:.2f}", lesson_facts.WORDS[order])


def attention_step(step, at, answer, load, specs):
    p = step.params
    e = load(p.get("model", "bert")).encode([p["text"]])[0]
    att = e.attentions[p.get("layer", 1) - 1, p.get("head", 1) - 1]
    n = len(e.tokens) - 1
    hits = sum(int(np.argmax(att[i])) == i + 1 for i in range(n))
    _has(answer, f"In {hits} of the {n} rows")
    assert hits == n  # "this head looks at the next character"


def finetune_step(step, at, answer, load, specs):
    ev = {m: records.read_evals(checkpoint.resolve(m), ["sentiment"])[0]["sentiment"] for m in ("bert", "elmo")}
    full = {k: v for k, v, _ in fl.full_size_rows(ev["bert"], ev["elmo"])}
    _has(answer, *(f"{full[k]:.3f}" for k in ("bert_finetuned", "bert_input", "elmo_input", "w2v_input")))
    main = [full[k] for k in ("bert_finetuned", "bert_input", "elmo_input")]
    assert (max(main) - min(main)) * 100 < 2  # "within ... points: no clear lead of fine-tuned BERT"
    assert any("BERT_finetuning" in m.value for m in at.markdown)


def next_char_step(step, at, answer, load, specs):
    gpt, prompt = load("gpt"), step.params["prompt"]
    top, p = gpt.next_char(prompt, 1)[0]
    r = gpt.char_rank(prompt, step.params["answer"])
    _has(
        answer, f"top guess is {top} ({_pct(p)})", f"{step.params['answer']} is ranked {r['rank']} ({_pct(r['prob'])})"
    )
    assert top in _labels(specs[0])


def positions_step(step, at, answer, load, specs):
    from ctxlib import mechanics

    enc = load(step.params.get("model", "bert"))
    rep = mechanics.repeated_char_check(enc, step.params["text"])
    same = rep["layer0_max_diff"] == 0
    assert same == (mechanics.position_scheme(enc.model.cfg)["scheme"] == "rope")  # the answer says: identical
    assert any("**0.000000**" in m.value for m in at.markdown) == same


CHECKS = {k: v for k, v in globals().items() if k.endswith("_step")}

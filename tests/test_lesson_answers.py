"""A lesson step's answer as the student reads it (ctxlib.lesson_facts): filled from the view's data, every
placeholder the answer may name computed, the figures rounded as the charts show them; and what is shown before
Reveal (title, question, note) does not give the answer away (issue #36 item 2). Stand-in models and eval files
written here; the eval-file steps are also checked on the shipped eval files (JSON only, no model loaded)."""

import json
import re
from pathlib import Path

import pytest
from app_fakes import FakeEncoder, fakes

from ctxlib import checkpoint, lesson, lesson_compute, lesson_facts
from ctxlib.lesson import Step


def _step(kind, **params) -> Step:
    return Step(kind, {}, {}, {}, None, params)


def _fill(kind, params, data, en, words=None) -> str:
    return lesson.answer(Step(kind, {}, {}, {"zh": "-", "en": en}, None, params), data, "en", words)


def _all(kind, params) -> str:
    """An answer naming every fact the step may use."""
    return " ".join(f"{n}={{{n}}}" for n in lesson_facts.names(kind, params))


# -- ELMo's two LMs at the word ----------------------------------------------------------------------------------
class _LmElmo(FakeEncoder):
    """lm_topk as ELMo's: each LM's top k (a boundary symbol first, which the chart leaves out), by position."""

    def __init__(self, word_level=True, actual="北京", ranks=(3, 40)):
        super().__init__("elmo", 3, chars=not word_level)
        self.actual, self.ranks, self.calls = actual, ranks, []

    def lm_topk(self, text, index, k=10, target=None):
        self.calls.append((text, index, k, target))
        words = [w for w, _, _ in self.tokenize(text, target)]
        lm = {n: [("<S>", 0.3)] + [(f"{n[0]}{index}-{i}", 0.2 / (i + 1)) for i in range(k - 1)] for n in ("f", "b")}
        return {
            "tokens": words,
            "index": index,
            "forward": lm["f"],
            "backward": lm["b"],
            "actual": {
                "word": self.actual,
                "forward": 0.012,
                "backward": 0.00003,
                "rank": dict(zip(("forward", "backward"), self.ranks)),
            },
        }


def test_elmo_lm_reads_both_lms_at_the_word():
    elmo = _LmElmo()
    p = {"text": "他昨天去北京开会了", "word": "北京"}
    d = lesson_compute.compute(_step("elmo_lm", **p), {"elmo": elmo}.__getitem__)
    i = d["tokens"].index("北京")
    assert d["index"] == i > 0 and d["tokens"][d["index"]] == "北京"  # the position the chart highlights
    assert elmo.calls == [(p["text"], i, 20, "北京")] and len(d["forward"]) == len(d["backward"]) == 20
    f = lesson_facts.facts(_step("elmo_lm", **p), d)
    assert set(f) == set(lesson_facts.names("elmo_lm", p))
    assert f == {
        "word": "北京",
        "fwd_top": f"f{i}-0",  # the first word the chart lists: the boundary symbol left out
        "fwd_top_p": "20.0%",
        "fwd_rank": "3",
        "fwd_p": "1.2%",
        "bwd_top": f"b{i}-0",
        "bwd_top_p": "20.0%",
        "bwd_rank": "40",
        "bwd_p": "<0.01%",
    }


def test_elmo_lm_keeps_the_word_whole_where_the_segmenter_would_not():
    elmo = _LmElmo()
    d = lesson_compute.compute(_step("elmo_lm", text="他昨天去北京开会了", word="京开"), {"elmo": elmo}.__getitem__)
    assert d["tokens"][d["index"]] == "京开" and elmo.calls[0][1] == d["index"] == 3


def test_elmo_lm_when_the_word_is_not_one_token_reads_the_first():
    elmo = _LmElmo(word_level=False)
    d = lesson_compute.compute(_step("elmo_lm", text="他去北京", word="北京"), {"elmo": elmo}.__getitem__)
    assert d["index"] == 0 and elmo.calls[0][1] == 0


@pytest.mark.parametrize("actual, ranks", [("<unk>", (3, 40)), (None, (3, 40)), ("北京", (None, 40))])
def test_an_unranked_word_gets_no_rank(actual, ranks):
    elmo = _LmElmo(actual=actual, ranks=ranks)
    p = {"text": "他昨天去北京开会了", "word": "北京"}
    d = lesson_compute.compute(_step("elmo_lm", **p), {"elmo": elmo}.__getitem__)
    text = _fill("elmo_lm", p, d, "{word}: forward #{fwd_rank} ({fwd_p}), backward #{bwd_rank}")
    assert text == ("北京: forward #? (?), backward #40" if actual == "北京" else "北京: forward #? (?), backward #?")


# -- the eval-file steps: ELMo's mix weights, TagLM's uses, fine-tuning ---------------------------------------------
class _Ckpt:
    def __init__(self, path, n_layers=3):
        self.path, self.layer_names = path, ["token"] + [f"biLSTM {j}" for j in range(1, n_layers)]


def _evals(tmp_path: Path):
    files = {
        "bert/eval_sentiment.json": {
            "task": "sentiment",
            "score": 0.9,
            "input_score": 0.88,
            "per_layer_score": [0.8, 0.85],
            "finetune_score": 0.912,
            "finetune_recipe": {"head": "mean", "epochs": 3, "lr": 2e-5, "batch": 32},
        },
        "elmo/eval_sentiment.json": {
            "task": "sentiment",
            "mix_weights": [0.1, 0.2, 0.7],
            "gamma": 0.5,
            "input_score": 0.87,
            "concat_score": 0.86,
            "mix_probe_score": 0.8,
            "word2vec_score": 0.84,
            "word2vec_probe_score": 0.7,
        },
        "elmo/eval_pos.json": {
            "task": "pos",
            "mix_weights": [0.2, 0.5, 0.3],
            "gamma": 1.234,
            "baseline_score": 0.9,
            "word2vec_score": 0.92,
            "input_score": 0.95,
            "concat_score": 0.9449,
        },
    }
    for name, d in files.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(json.dumps(d), encoding="utf-8")
    return {m: _Ckpt(tmp_path / m) for m in ("bert", "elmo")}.__getitem__


def test_elmo_mix_names_each_tasks_heaviest_layer(tmp_path):
    d = lesson_compute.compute(_step("elmo_mix"), _evals(tmp_path))
    assert sorted(d["evals"]) == ["pos", "sentiment"] and d["missing"] == ["ner"] and d["n_layers"] == 3
    assert d["evals"]["pos"].mix_weights == [0.2, 0.5, 0.3]  # the chart's bars
    f = lesson_facts.facts(_step("elmo_mix"), d, {"token_layer": "字符层"})
    assert f == {
        "pos_top": "biLSTM 1",
        "pos_top_w": "0.50",
        "pos_gamma": "1.23",
        "sentiment_top": "biLSTM 2",
        "sentiment_top_w": "0.70",
        "sentiment_gamma": "0.50",
    }  # NER has no eval file: its placeholders show "?"
    assert set(lesson_facts.names("elmo_mix", {})) == set(f) | {"ner_top", "ner_top_w", "ner_gamma"}
    d["evals"]["pos"].mix_weights = [0.6, 0.3, 0.1, 0.0]
    d["n_layers"] = 2  # a file with more weights than the model has layers names the index
    f = lesson_facts.facts(_step("elmo_mix"), d, {"token_layer": "字符层"})
    assert f["pos_top"] == "字符层"
    d["evals"]["pos"].mix_weights = [0.1, 0.2, 0.7]
    assert lesson_facts.facts(_step("elmo_mix"), d)["pos_top"] == "2"


def test_finetune_and_taglm_answers_are_the_eval_files_figures(tmp_path):
    load = _evals(tmp_path)
    d = lesson_compute.compute(_step("finetune"), load)
    assert d == lesson_compute.compute(_step("taglm"), load) and d["missing"] == ["ner"]
    assert d["recipe"] == {"head": "mean", "epochs": 3, "lr": 2e-5, "batch": 32}
    assert sorted(d["elmo_evals"]) == ["pos", "sentiment"]
    f = lesson_facts.facts(_step("finetune"), d)
    assert set(f) == set(lesson_facts.names("finetune", {}))
    assert f == {
        "bert_finetuned": "0.912",
        "bert_input": "0.880",
        "bert_probe": "0.850",
        "elmo_input": "0.870",
        "elmo_concat": "0.860",
        "elmo_probe": "0.800",
        "w2v_input": "0.840",
        "w2v_probe": "0.700",
        "spread": "4.2",  # (0.912 - 0.870) points
        "head": "mean",
        "epochs": "3",
    }
    t = lesson_facts.facts(_step("taglm"), d)
    assert set(t) == set(lesson_facts.names("taglm", {}))
    assert [t[f"pos_{k}"] for k in ("base", "w2v", "input", "concat")] == ["0.900", "0.920", "0.950", "0.945"]
    assert [t[f"sentiment_{k}"] for k in ("base", "w2v", "input", "concat")] == ["?", "0.840", "0.870", "0.860"]
    assert all(t[f"ner_{k}"] == "?" for k in ("base", "w2v", "input", "concat"))


def test_finetune_without_files_claims_nothing(tmp_path):
    d = lesson_compute.compute(_step("finetune"), {m: _Ckpt(tmp_path / m) for m in ("bert", "elmo")}.__getitem__)
    assert d == {"full": [], "recipe": None, "elmo_evals": {}, "missing": ["pos", "ner", "sentiment"]}
    f = lesson_facts.facts(_step("finetune"), d)
    assert set(f.values()) == {lesson_facts.MISSING}
    one = {**d, "full": [("elmo_input", 0.87, "f")]}
    assert lesson_facts.facts(_step("finetune"), one)["spread"] == "?"  # one figure has no spread


# -- cosine: which models put the first pair closer ------------------------------------------------------------
def test_closer_lists_the_models_whose_first_pair_is_clearly_closer():
    p = {"word": "苹果", "sentences": ["a苹果", "b苹果", "c苹果"]}
    rows = [
        ("word2vec", "t", [1.0, 1.0]),
        ("elmo", "l", [0.9, 0.5]),
        ("bert", "l", [0.6, 0.595]),
        ("gpt", "l", [0.8, 0.2]),
    ]
    assert _fill("cosine", p, {"rows": rows}, "{closer}; {elmo_2} {elmo_3}") == "ELMo, GPT; 0.90 0.50"
    none = {"rows": rows[:1] + [("hf-x", "l", [0.1, 0.5])]}
    assert _fill("cosine", p, none, "{closer}", {"none": "没有模型"}) == "没有模型"
    assert _fill("cosine", p, {"rows": [("hf-x", "l", [0.9, 0.1])]}, "{closer}") == "hf-x"
    two = {"word": "苹果", "sentences": ["a苹果", "b苹果"]}
    assert "closer" not in lesson_facts.facts(Step("cosine", {}, {}, {}, None, two), {"rows": rows})
    assert lesson_facts.names("cosine", two) == ("word2vec_2", "elmo_2", "bert_2", "gpt_2")
    assert lesson_facts.names("cosine", {**p, "models": ["elmo"]}) == ("elmo_2", "elmo_3", "closer")


# -- the small helpers ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "p, shown",
    [(0.2606, "26.1%"), (0.01, "1.0%"), (0.0099, "0.99%"), (0.0001, "0.01%"), (0.00009, "<0.01%"), (None, "?")],
)
def test_a_probability_reads_as_the_charts_show_it(p, shown):
    assert lesson_facts.pct(p) == shown


def test_placeholders_of_each_kind():
    assert lesson_facts.names("fill_mask", {}) == lesson_facts.names("next_char", {}) == ("top", "top_p")
    assert lesson_facts.names("fill_mask", {"answer": "京"})[2:] == ("answer", "rank", "p")
    assert lesson_facts.names("next_char", {"answer": "都"})[2:] == ("answer", "rank", "p")
    assert lesson_facts.names("cove", {}) == lesson_facts.names("positions", {}) == ()
    assert lesson_facts.used("与{best}和{x_1}，\\mathrm{y} a{b} _{k}") == ["best", "x_1"]


def test_answers_without_facts_and_with_an_empty_candidate_list():
    data = {"masks": [{"index": 1, "candidates": []}], "answer": [{"char": None, "rank": None, "prob": None}]}
    assert _fill("fill_mask", {}, data, "{top} ({top_p})") == "? (?)"
    assert _fill("next_char", {}, {"candidates": [("好", 0.5)]}, "{top} ({top_p})") == "好 (50.0%)"
    pos = Step("positions", {}, {}, {"zh": "相同", "en": "identical"}, None, {"text": "苹果苹果"})
    assert lesson.answer(pos, {"scheme": "rope", "layer0_max_diff": 0.0}, "en") == "identical"


def test_the_answer_uses_the_given_words():
    step = Step("nsp", {}, {}, {"zh": "{ab}，{ba}，{order}", "en": "x"}, None, {"a": "甲。", "b": "乙。"})
    assert lesson.answer(step, {"ab": 0.9, "ba": 0.2}, "zh", {"lower": "明显更低"}) == "0.90，0.20，明显更低"
    assert (
        lesson.answer(step, {"ab": 0.9, "ba": 0.2}, "zh", escape=lambda v: f"<{v}>")
        == "<0.90>，<0.20>，<clearly lower>"
    )


# -- the shipped lessons: nothing before Reveal gives the answer away -------------------------------------------------
VERDICTS = {  # the words an answer's verdict fact can be: a question that says one has told the answer
    "nsp": ("same", "lower", "higher"),
    "mlm_example": ("right", "wrong"),
    "unseen_word": ("oov", "known", "elmo_oov", "elmo_known"),
}


def _before(step, code) -> str:
    return "\n".join(step.text(k, code) for k in ("title", "question", "note"))


@pytest.mark.parametrize("name", lesson.shipped())
def test_no_question_names_a_verdict_or_a_placeholder(name):
    for step in lesson.load(name).steps:
        for code in lesson.LANGS:
            assert not lesson_facts.used(_before(step, code)), (step.kind, code)
        for key in VERDICTS.get(step.kind, ()):
            assert lesson_facts.WORDS[key] not in _before(step, "en"), (step.kind, key)


def test_the_eval_file_steps_answer_from_the_shipped_files_and_the_question_does_not():
    dirs = {m: checkpoint.CHECKPOINT_DIR / m for m in ("bert", "elmo")}
    if not all((d / "eval_sentiment.json").is_file() for d in dirs.values()):
        pytest.skip("shipped eval files missing")
    load = {m: _Ckpt(d) for m, d in dirs.items()}.__getitem__
    steps = [s for s in lesson.load("default").steps if s.kind in ("elmo_mix", "taglm", "finetune")]
    assert {s.kind for s in steps} == {"elmo_mix", "taglm", "finetune"}
    for step in steps:
        data = lesson_compute.compute(step, load)
        for code in lesson.LANGS:
            text = lesson.answer(step, data, code)
            assert not lesson_facts.used(text) and lesson_facts.MISSING not in text.split(), (step.kind, text)
        facts = lesson_facts.facts(step, data)
        for name in lesson_facts.used(step.text("answer", "en")):
            if re.fullmatch(r"\d{1,2}", facts[name]):  # a count (epochs) is no figure to give away
                continue
            for code in lesson.LANGS:
                assert facts[name] not in _before(step, code), (step.kind, name, facts[name])


# -- edge figures: the nearest-word rows, the spread, the live lead ----------------------------------------------------
def test_unseen_word_reads_the_token_layer_and_the_top_layer():
    p = {"word": "元宇宙", "sentence": "谈论元宇宙"}
    base = {"w2v_known": False, "elmo_known": False, "dim": 8}
    rows = [[("甲", 0.9)], [("乙", 0.8)], [("丙", 0.7)]]
    text = "{token_near} {token_cos} / {top_near} {top_cos}"
    assert _fill("unseen_word", p, {**base, "nearest": rows}, text) == "甲 0.90 / 丙 0.70"
    assert _fill("unseen_word", p, {**base, "nearest": [[], *rows[1:]]}, text) == "? ? / 丙 0.70"
    assert _fill("unseen_word", p, {**base, "nearest": [*rows[:2], []]}, text) == "甲 0.90 / ? ?"


def test_the_spread_is_in_points_over_the_main_figures():
    full = [("bert_finetuned", 0.9, ""), ("bert_input", 0.8, ""), ("elmo_input", 0.85, ""), ("w2v_input", 0.5, "")]
    assert _fill("finetune", {}, {"full": full, "recipe": None}, "{spread}") == "10.0"  # w2v not among them
    two = [("bert_finetuned", 0.9, ""), ("elmo_input", 0.85, "")]
    assert _fill("finetune", {}, {"full": two, "recipe": None}, "{spread}") == "5.0"


def test_the_mlm_verdict_says_wrong_when_the_head_is_wrong():
    ex = {"is_next": True, "original_tokens": ["[CLS]", "甲", "[SEP]"], "masked": [{"kind": "mask"}]}
    d = {"example": ex, "p_next": 0.2, "seed": 3, "found": False}
    assert _fill("mlm_example", {}, d, "{label} {p_next}: {verdict}") == "IsNext 0.20: which is wrong"


def test_live_lead_and_verdict_at_a_tie():
    res = {"accuracy": 0.7, "baselines": {"elmo": 0.6}, "n_train": 300, "n_test": 200, "seconds": 5.0}
    f = lesson_facts.live_facts("finetune", res)
    assert (f["lead"], f["verdict"], f["n_train"]) == ("+10.0", lesson_facts.LIVE_WORDS["ahead"], "300")
    tie = lesson_facts.live_facts("finetune", {**res, "accuracy": 0.6})
    assert (tie["lead"], tie["verdict"]) == ("+0.0", lesson_facts.LIVE_WORDS["behind"])  # not ahead at a tie
    step = Step("finetune", {}, {}, {}, None, {}, None)
    assert lesson.live_answer(step, res, "en") == ""  # no live answer and no default: nothing claimed
    zh = Step("finetune", {}, {}, {}, None, {}, {"zh": "{verdict}", "en": "{verdict}"})
    assert lesson.live_answer(zh, res, "zh", {"ahead": "领先"}) == "领先"


def test_an_lm_whose_top_words_are_all_symbols_names_no_top_word():
    d = {"tokens": ["他", "去", "北京"], "index": 2, "forward": [("<S>", 0.9)], "backward": [("</S>", 0.8)]}
    text = _fill("elmo_lm", {"word": "北京"}, d, "{fwd_top} ({fwd_top_p}) {bwd_top}")
    assert text == "? (?) ?"


# -- the registered English models (lesson.ENGLISH) -------------------------------------------------------------
class _En(FakeEncoder):
    def __init__(self, language):
        super().__init__("hf", 2)
        self.language = language


def test_english_models_are_the_registered_ones_that_load_and_read_english(monkeypatch):
    from types import SimpleNamespace

    from ctxlib import registered

    names = ["broken", "en-a", "zh-b", "en-c"]
    monkeypatch.setattr(registered, "extra_models", lambda: [SimpleNamespace(name=n) for n in names])
    encs = {"en-a": _En("en"), "zh-b": _En("zh"), "en-c": _En("en"), "word2vec": fakes()["word2vec"]}

    def load(name):
        if name not in encs:
            raise FileNotFoundError(name)
        return encs[name]

    assert lesson_compute.english_models(load) == ["en-a", "en-c"]
    assert lesson_compute.expand_models(["word2vec", lesson.ENGLISH], load) == ["word2vec", "en-a", "en-c"]
    d = lesson_compute.compute(
        _step("cosine", word="bank", sentences=["the bank of the river", "a bank loan"], models=[lesson.ENGLISH]), load
    )
    assert [m for m, _, _ in d["rows"]] == ["en-a", "en-c"]
    encs["zh-b"].language = None
    del encs["zh-b"].language  # a model that does not say its language is not an English one
    assert lesson_compute.english_models(load) == ["en-a", "en-c"]

"""A lesson step's live answer: the field is checked like the answer (only on a step with a live job, only the
finished run's facts as placeholders), and its facts are the run's own figures."""

import json
import re

import pytest

from ctxlib import lesson, lesson_facts
from ctxlib.app import i18n

RESULT = {  # the shape of ctxlib.evaluation.finetune_live.run's result
    "accuracy": 0.655,
    "baselines": {"bert_cls": 0.61, "elmo": 0.675, "word2vec": None},
    "majority": 0.52,
    "history": [{"step": k, "loss": 0.7, "acc": 0.5} for k in range(1, 39)],
    "n_train": 300,
    "n_test": 200,
    "seconds": 61.3,
}


def _lesson(step: dict) -> bytes:
    base = {"title": {"zh": "标题", "en": "T"}, "question": {"zh": "问", "en": "Q"}, "answer": {"zh": "答", "en": "A"}}
    return json.dumps({"title": {"zh": "课", "en": "L"}, "steps": [{**base, **step}]}, ensure_ascii=False).encode()


def test_live_facts_are_the_runs_figures():
    f = lesson_facts.live_facts("finetune", RESULT)
    assert f["acc"] == "0.655" and f["bert_cls"] == "0.610" and f["elmo"] == "0.675"
    assert f["word2vec"] == lesson_facts.MISSING  # no word2vec: no probe, no figure made up
    assert f["steps"] == "38" and f["n_test"] == "200" and f["seconds"] == "61.3" and f["majority"] == "0.520"
    assert f["best"] == lesson_facts.LIVE_WORDS["elmo"] and f["lead"] == "-2.0"
    assert f["verdict"] == lesson_facts.LIVE_WORDS["behind"]
    ahead = lesson_facts.live_facts("finetune", {**RESULT, "accuracy": 0.7})
    assert ahead["lead"] == "+2.5" and ahead["verdict"] == lesson_facts.LIVE_WORDS["ahead"]
    alone = lesson_facts.live_facts("finetune", {**RESULT, "baselines": {"bert_cls": None, "elmo": None}})
    assert alone["best"] == lesson_facts.LIVE_WORDS["no_baseline"] and alone["verdict"] == lesson_facts.MISSING
    assert set(f) == set(lesson_facts.live_names("finetune"))
    assert lesson_facts.live_facts("nsp", RESULT) == {} and lesson_facts.live_names("nsp") == ()


def test_live_answer_is_read_and_filled():
    les = lesson.parse(
        _lesson({"kind": "finetune", "live_answer": {"zh": "准确率 {acc}", "en": "scored {acc}, {verdict}"}})
    )
    step = les.steps[0]
    assert lesson.live_answer(step, RESULT, "en") == "scored 0.655, " + lesson_facts.LIVE_WORDS["behind"]
    assert lesson.live_answer(step, RESULT, "zh") == "准确率 0.655"
    plain = lesson.parse(_lesson({"kind": "finetune"})).steps[0]
    assert plain.live_answer is None
    assert lesson.live_answer(plain, RESULT, "en", default="{acc} on {n_test}") == "0.655 on 200"


@pytest.mark.parametrize(
    "step, code",
    [
        ({"kind": "nsp", "params": {"a": "甲。", "b": "乙。"}, "live_answer": {"zh": "x", "en": "x"}}, "unknown_field"),
        ({"kind": "finetune", "live_answer": {"zh": "{acc}", "en": "{bert_finetuned}"}}, "unknown_fact"),
        ({"kind": "finetune", "answer": {"zh": "{acc}", "en": "A"}}, "unknown_fact"),  # the shipped answer's are others
        ({"kind": "finetune", "live_answer": {"zh": "", "en": "x"}}, "empty_text"),
        ({"kind": "finetune", "live_answer": "scored {acc}"}, "wrong_type"),
    ],
)
def test_bad_live_answers_are_refused(step, code):
    with pytest.raises(lesson.LessonError) as e:
        lesson.parse(_lesson(step))
    assert e.value.code == code and e.value.step == 1


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_apps_default_live_answer_names_only_live_facts(lang):
    text = i18n.lookup("lesson_live.answer_default", lang)
    used = lesson_facts.used(text)
    assert used and set(used) <= set(lesson_facts.live_names("finetune"))
    filled = lesson_facts.fill(text, lesson_facts.live_facts("finetune", RESULT))
    assert "0.655" in filled and not re.search(r"{[a-z_]+}", filled)  # a {name} after a CJK letter stays unfilled
    words = {k: i18n.lookup(f"lesson_live.fact.{k}", lang) for k in lesson_facts.LIVE_WORDS}
    assert all(w and not w.startswith("lesson_live.") for w in words.values())


def test_the_shipped_lesson_has_a_live_answer_in_both_languages():
    step = next(s for s in lesson.load("default").steps if s.kind in lesson.LIVE_KINDS)
    for lang in lesson.LANGS:
        assert {"acc", "bert_cls", "elmo", "verdict"} <= set(lesson_facts.used(step.text("live_answer", lang)))
        filled = lesson.live_answer(step, RESULT, lang)
        assert "0.655" in filled and not re.search(r"{[a-z_]+}", filled), filled


def test_a_placeholder_right_after_a_chinese_character_is_filled():
    from ctxlib import lesson_facts

    out = lesson_facts.PLACEHOLDER.sub(
        lambda m: {"best": "BERT"}.get(m.group(1), "?"), "与{best}相比，\\mathrm{x} 和 _{k}"
    )
    assert out == "与BERT相比，\\mathrm{x} 和 _{k}"

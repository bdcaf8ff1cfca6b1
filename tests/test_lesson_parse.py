"""Reading a lesson file (ctxlib.lesson.parse): each malformed file's message names the step, the field and the
limit the teacher must meet (the app translates the same values), each limit holds exactly at its value, and a
valid file keeps every text and parameter it gives."""

import json

import pytest

from ctxlib import lesson, lesson_facts
from ctxlib.lesson import LessonError, Step

T = {"zh": "题", "en": "t"}


def _s(kind="cosine", params=None, **extra) -> dict:
    p = {"word": "苹果", "sentences": ["苹果好吃", "苹果手机"]} if params is None and kind == "cosine" else params
    return {"kind": kind, "title": T, "question": T, "answer": T, **({"params": p} if p is not None else {}), **extra}


def _file(*steps, **top) -> str:
    return json.dumps({"title": {"zh": "课", "en": "L"}, "steps": list(steps) or [_s()], **top}, ensure_ascii=False)


def _error(raw) -> LessonError:
    with pytest.raises(LessonError) as e:
        lesson.parse(raw)
    return e.value


@pytest.mark.parametrize(
    "raw, code, step, values, text",
    [
        (
            json.dumps({"steps": [_s()]}),
            "missing",
            None,
            {"field": "title"},
            'the field "title" is missing',
        ),
        (
            _file(extra=1),
            "unknown_field",
            None,
            {"field": "extra", "allowed": "title, steps"},
            'unknown field "extra" (allowed: title, steps)',
        ),
        (
            _file(_s("elmo_mix", {"word": "x"})),
            "unknown_field",
            1,
            {"field": "word", "allowed": "-"},
            'step 1: unknown field "word" (allowed: -)',
        ),
        (
            json.dumps({"title": ["zh", "en"], "steps": [_s()]}),
            "wrong_type",
            None,
            {"field": "title", "expected": "langs"},
            'the field "title" must be an object with "zh" and "en" texts',
        ),
        (
            _file(_s(), _s(question=["zh", "en"])),
            "wrong_type",
            2,
            {"field": "question", "expected": "langs"},
            'step 2: the field "question" must be an object with "zh" and "en" texts',
        ),
        (
            _file(_s(), "step"),
            "wrong_type",
            2,
            {"field": "steps[2]", "expected": "object"},
            'step 2: the field "steps[2]" must be an object',
        ),
        (
            _file(_s(), _s(note={"zh": "注" * 2001, "en": "n"})),
            "too_long",
            2,
            {"field": "note", "max": 2000},
            'step 2: the field "note" is longer than 2000 characters',
        ),
        (
            _file(_s("k" * 50)),
            "unknown_kind",
            1,
            {"kind": "k" * 40, "kinds": ", ".join(lesson.KINDS)},
            f'step 1: unknown view kind "{"k" * 40}" (known kinds: {", ".join(lesson.KINDS)})',
        ),
        (
            _file(_s(params={"word": "苹果", "sentences": ["苹果", "苹果"], "models": ["g" * 50]})),
            "bad_model",
            1,
            {"model": "g" * 40, "models": "word2vec, elmo, bert, gpt, @english"},
            f'step 1: "{"g" * 40}" is no model of this app (models: word2vec, elmo, bert, gpt, @english)',
        ),
        (
            _file(_s("attention", {"text": "你好", "model": "hf"})),
            "bad_model",
            1,
            {"model": "hf", "models": "bert, gpt"},
            'step 1: "hf" is no model of this app (models: bert, gpt)',
        ),
        (
            _file(_s("nsp", {"a": "甲", "b": " "})),
            "empty_text",
            1,
            {"field": "b", "lang": "-"},
            'step 1: the field "b" has no - text',
        ),
        (
            _file(_s(params={"word": "苹果", "sentences": ["苹果", ""]})),
            "empty_text",
            1,
            {"field": "sentences", "lang": "-"},
            'step 1: the field "sentences" has no - text',
        ),
        (
            _file(_s(params={"word": "苹果", "sentences": ["苹果", "苹" * 301]})),
            "too_long",
            1,
            {"field": "sentences", "max": 300},
            'step 1: the field "sentences" is longer than 300 characters',
        ),
        (
            _file(_s(params={"word": "苹果", "sentences": ["苹果好吃", "香蕉"]})),
            "word_missing",
            1,
            {"word": "苹果", "sentence": "香蕉"},
            'step 1: the word "苹果" is not in the sentence "香蕉"',
        ),
        (
            _file(_s("elmo_lm", {"text": "他去北京", "word": "上海"})),
            "word_missing",
            1,
            {"word": "上海", "sentence": "他去北京"},
            'step 1: the word "上海" is not in the sentence "他去北京"',
        ),
        (
            _file(_s(), _s("unseen_word", {"word": "元宇宙", "sentence": "很多公司"})),
            "word_missing",
            2,
            {"word": "元宇宙", "sentence": "很多公司"},
            'step 2: the word "元宇宙" is not in the sentence "很多公司"',
        ),
        (
            _file(_s("positions", {"text": "好" * 41})),
            "too_long",
            1,
            {"field": "text", "max": 40},
            'step 1: the field "text" is longer than 40 characters',
        ),
        (
            _file(_s("attention", {"text": "你好", "layer": 0})),
            "bad_number",
            1,
            {"field": "layer", "lo": 1, "hi": 64},
            'step 1: the field "layer" must be a whole number from 1 to 64',
        ),
        (
            _file(_s("mlm_example", {"seed": 10**9 + 1})),
            "bad_number",
            1,
            {"field": "seed", "lo": 0, "hi": 10**9},
            'step 1: the field "seed" must be a whole number from 0 to 1000000000',
        ),
        (
            _file(_s(), _s("cove", answer={"zh": "{" + "x" * 50 + "}", "en": "a"})),
            "unknown_fact",
            2,
            {"name": "x" * 40, "facts": "-"},
            f"step 2: the answer names {{{'x' * 40}}}, which this view does not compute (it computes: -)",
        ),
        (
            _file(_s("nsp", {"a": "甲", "b": "乙"}, answer={"zh": "{top}", "en": "a"})),
            "unknown_fact",
            1,
            {"name": "top", "facts": "ab, ba, order"},
            "step 1: the answer names {top}, which this view does not compute (it computes: ab, ba, order)",
        ),
        (
            _file(_s(), _s("finetune", live_answer={"zh": "{acc}", "en": "{top}"})),
            "unknown_fact",
            2,
            {"name": "top", "facts": ", ".join(lesson_facts.live_names("finetune"))},
            None,
        ),
        (
            _file(*[_s()] * 101),
            "too_many",
            None,
            {"max": 100},
            "the lesson has more than 100 steps",
        ),
    ],
)
def test_the_message_names_step_field_and_limit(raw, code, step, values, text):
    e = _error(raw)
    assert (e.code, e.step, e.values) == (code, step, values)
    if text is not None:
        assert str(e) == text


@pytest.mark.parametrize(
    "params, field",
    [
        ({"word": "苹果", "sentences": ["苹果"] * 2, "models": []}, "models"),
        ({"word": "苹果", "sentences": ["苹果"] * 2, "models": "bert"}, "models"),
        ({"word": "苹果", "sentences": ["苹果"] * 7}, "sentences"),
    ],
)
def test_a_list_of_the_wrong_shape_is_refused(params, field):
    e = _error(_file(_s(params=params)))
    assert (e.code, e.step, e.values["field"]) == ("wrong_type", 1, field)


def test_each_limit_holds_at_its_value():
    ok = [
        _s(params={"word": "苹果", "sentences": ["苹果" + "好" * 298] + ["苹果"] * 5}),  # 300 characters, 6 sentences
        _s("positions", {"text": "苹" * 40}),
        _s("attention", {"text": "你好", "layer": 64, "head": 64}),
        _s("mlm_example", {"seed": 10**9}),
        _s("mlm_example", {"seed": 0}),
        _s(note={"zh": "注" * 2000, "en": "n"}),
        _s("finetune"),  # a live step need not have a live answer
    ]
    les = lesson.parse(_file(*ok, *[_s()] * (lesson.MAX_STEPS - len(ok))))
    assert len(les.steps) == lesson.MAX_STEPS and les.steps[4].params == {"seed": 0}
    raw = _file().encode()
    padded = raw + b" " * (lesson.MAX_BYTES - len(raw))  # exactly the size limit
    assert len(padded) == lesson.MAX_BYTES and lesson.parse(padded).title == {"zh": "课", "en": "L"}
    e = _error(padded + b" ")
    assert (e.code, e.values, str(e)) == ("too_big", {"max_kb": 256}, "the file is larger than 256 KB")


@pytest.mark.parametrize("field", ["layer", "head"])
def test_layer_and_head_above_64_are_refused(field):
    e = _error(_file(_s("attention", {"text": "你好", field: 65})))
    assert (e.code, e.values) == ("bad_number", {"field": field, "lo": 1, "hi": 64})


def test_a_bad_json_message_gives_the_place():
    e = _error('{"title": {"zh": "课", "en": "L"},\n  "steps": [1,]}')
    assert e.values == {"reason": "Expecting value", "reason_code": "value", "line": 2, "col": 15}
    assert str(e) == "the file is not valid JSON: Expecting value at line 2, column 15"


def test_a_valid_file_keeps_every_text_and_parameter():
    note = {"zh": "注意", "en": "Note"}
    live = {"zh": "准确率 {acc}", "en": "scored {acc}"}
    raw = _file(_s(note=note), _s("finetune", live_answer=live), _s("nsp", {"a": "甲", "b": "乙"}))
    les = lesson.parse(raw)
    assert les.title == {"zh": "课", "en": "L"}
    first, ft, nsp = les.steps
    assert first == Step("cosine", T, T, T, note, {"word": "苹果", "sentences": ["苹果好吃", "苹果手机"]})
    assert first.text("note", "zh") == "注意" and first.text("title", "en") == "t"
    assert ft.live_answer == live and ft.text("live_answer", "en") == "scored {acc}"
    assert nsp.note is None and nsp.text("note", "en") == "" and nsp.text("live_answer", "zh") == ""


def test_a_lesson_file_without_a_suffix_is_read_by_path(tmp_path):
    p = tmp_path / "mylesson"
    p.write_text(_file(), encoding="utf-8")
    assert lesson.load(p).title == {"zh": "课", "en": "L"}


def test_the_default_lesson_is_listed_first(monkeypatch, tmp_path):
    for n in ("a", "default", "zz"):
        (tmp_path / f"{n}.json").write_text("{}", encoding="utf-8")
    monkeypatch.setattr(lesson, "LESSON_DIR", tmp_path)
    assert lesson.shipped() == ["default", "a", "zz"]


def test_the_models_a_step_needs():
    assert Step("cosine", T, T, T, None, {"word": "x", "sentences": []}).models() == ("word2vec", "elmo", "bert", "gpt")
    assert Step("cosine", T, T, T, None, {"models": ["elmo"]}).models() == ("elmo",)
    assert Step("attention", T, T, T, None, {"text": "x"}).models() == ("bert",)
    assert Step("positions", T, T, T, None, {"text": "x", "model": "gpt"}).models() == ("gpt",)
    assert Step("unseen_word", T, T, T, None, {}).models() == ("word2vec", "elmo")
    assert Step("cove", T, T, T, None, {}).models() == () == Step("bogus", T, T, T, None, {}).models()

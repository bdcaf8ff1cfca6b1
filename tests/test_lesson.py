"""Lesson files (ctxlib/lesson.py): the shipped lesson is valid and follows the lecture; each kind of malformed file
gives its own clear message (and the app has it in both languages); the views compute on stand-in encoders; the
presentation mode's font scaling."""

import copy
import json

import numpy as np
import plotly.graph_objects as go
import pytest
from app_fakes import fakes

from ctxlib import kinds, lesson, lesson_compute, lesson_facts
from ctxlib.app import i18n
from ctxlib.lesson import LessonError, Step
from ctxlib.viz.common import scale_fonts


def _lesson(**step) -> dict:
    base = {
        "kind": "cosine",
        "title": {"zh": "标题", "en": "Title"},
        "question": {"zh": "问题", "en": "Question"},
        "answer": {"zh": "答案", "en": "Answer"},
        "params": {"word": "苹果", "sentences": ["苹果真好吃", "苹果手机很好用"]},
    }
    base.update(step)
    return {"title": {"zh": "课", "en": "Lesson"}, "steps": [{k: v for k, v in base.items() if v is not None}]}


def _error(data) -> LessonError:
    raw = data if isinstance(data, (bytes, str)) else json.dumps(data, ensure_ascii=False)
    with pytest.raises(LessonError) as e:
        lesson.parse(raw)
    return e.value


def test_the_shipped_lesson_is_valid_and_follows_the_lecture():
    les = lesson.load("default")
    assert lesson.shipped()[0] == "default"
    kinds = [s.kind for s in les.steps]
    assert set(kinds) <= set(lesson.KINDS) and len(kinds) >= 8
    first = {k: kinds.index(k) for k in kinds[::-1]}  # first position of each kind
    # static vectors' limits and type vs token -> ELMo (LMs, s/γ) -> BERT MLM, 80/10/10 and NSP -> attention -> GPT
    order = [
        "cosine",
        "unseen_word",
        "elmo_lm",
        "elmo_mix",
        "taglm",
        "cove",
        "fill_mask",
        "mlm_example",
        "nsp",
        "attention",
        "finetune",
        "next_char",
    ]
    assert [first[k] for k in order] == sorted(first[k] for k in order)
    for s in les.steps:
        for name in ("title", "question", "answer"):
            assert s.text(name, "zh") and s.text(name, "en")
            assert s.text(name, "zh") != s.text(name, "en")
    assert lesson.load(lesson.LESSON_DIR / "default.json") == les  # by path too


def test_answer_placeholders_are_checked_and_filled():
    ok = _lesson(
        kind="next_char",
        params={"prompt": "北京是中国的首", "answer": "都"},
        answer={
            "zh": "首选 {top}（{top_p}），{answer} 第 {rank}",
            "en": "top {top} ({top_p}); {answer} ranks {rank}, $\\mathrm{x}_{k}$ {p}",
        },
    )
    step = lesson.parse(json.dumps(ok, ensure_ascii=False)).steps[0]
    data = {"candidates": [("次", 0.2606), ("都", 0.1079)], "answer": {"token": "都", "rank": 2, "prob": 0.1079}}
    assert lesson.answer(step, data, "en") == "top 次 (26.1%); 都 ranks 2, $\\mathrm{x}_{k}$ 10.8%"
    assert lesson.answer(step, None, "zh") == "首选 ?（?），? 第 ?"  # not computed: no claim at all
    e = _error(
        _lesson(kind="next_char", params={"prompt": "北京"}, answer={"zh": "{top}", "en": "{answer} ranks {rank}"})
    )
    assert (e.code, e.values["name"]) == ("unknown_fact", "answer")  # no answer param: nothing to rank
    assert _error(_lesson(answer={"zh": "{tpo}", "en": "x"})).code == "unknown_fact"


def test_fact_words_match_the_english_catalogue():
    assert {k: i18n.lookup(f"lesson.fact.{k}", "en") for k in lesson_facts.WORDS} == lesson_facts.WORDS


def test_clean_pair():
    from ctxlib.lesson_compute import clean_pair

    assert clean_pair("投资如此巨大，债务如此沉重。", "在选拔人员方面要慎之又慎。")
    for a, b in [
        ("我买了sogo的衣服很好看。", "在选拔人员方面要慎之又慎。"),
        ("他花了300元买的衣服。", "在选拔人员方面要慎之又慎。"),
        ("不喜欢，不实用。。。。。", "在选拔人员方面要慎之又慎。"),
        ("投资如此巨大，债务如此沉", "在选拔人员方面要慎之又慎。"),
        ("投资巨大。", "在选拔人员方面要慎之又慎。"),
    ]:
        assert not clean_pair(a, b), a


def test_a_utf8_bom_and_a_str_are_read():
    raw = json.dumps(_lesson(), ensure_ascii=False)
    assert lesson.parse(b"\xef\xbb\xbf" + raw.encode("utf-8")) == lesson.parse(raw)


@pytest.mark.parametrize(
    "raw, code, values",
    [
        ('{"title": {"zh": "课", "en": "L"}, "steps": [}', "bad_json", {"line": 1, "reason_code": "value"}),
        ('{"title": {"zh": "课", "en": "L"},\n "steps": [] "x"}', "bad_json", {"line": 2, "reason_code": "comma"}),
        ("{'title': 1}", "bad_json", {"reason_code": "name"}),
        ("[1, 2]", "not_object", {}),
    ],
)
def test_bad_json(raw, code, values):
    e = _error(raw)
    assert e.code == code and e.step is None
    assert values.items() <= e.values.items()
    if code == "bad_json":
        assert f"line {e.values['line']}, column {e.values['col']}" in str(e)


def test_gb18030_and_binary_files_are_refused_with_a_message():
    gb = json.dumps(_lesson(), ensure_ascii=False).encode("gb18030")
    assert _error(gb).code == "not_utf8"
    assert "UTF-8" in str(_error(gb))
    assert _error(bytes(range(256)) * 4).code == "not_utf8"
    assert _error(b'{"title": "\x00"}').code == "not_utf8"
    assert _error(b" " * (lesson.MAX_BYTES + 1)).code == "too_big"


@pytest.mark.parametrize(
    "data, code, step, values",
    [
        ({"title": {"zh": "课", "en": "L"}}, "missing", None, {"field": "steps"}),
        ({**_lesson(), "steps": []}, "no_steps", None, {}),
        ({**_lesson(), "steps": {}}, "wrong_type", None, {"field": "steps", "expected": "list"}),
        ({**_lesson(), "title": "课"}, "wrong_type", None, {"field": "title", "expected": "langs"}),
        ({**_lesson(), "title": {"zh": "课"}}, "wrong_type", None, {"field": "title"}),
        ({**_lesson(), "extra": 1}, "unknown_field", None, {"field": "extra"}),
        (_lesson(question=None), "missing", 1, {"field": "question"}),
        (_lesson(answer={"zh": "答案", "en": "  "}), "empty_text", 1, {"field": "answer", "lang": "en"}),
        (_lesson(kind="wordcloud"), "unknown_kind", 1, {"kind": "wordcloud"}),
        (_lesson(kind=3), "wrong_type", 1, {"field": "kind", "expected": "text"}),
        (_lesson(qestion={"zh": "x", "en": "x"}), "unknown_field", 1, {"field": "qestion"}),
        (_lesson(params={"word": "苹果"}), "missing", 1, {"field": "sentences"}),
        (
            _lesson(params={"word": "苹果", "sentences": "苹果真好吃"}),
            "wrong_type",
            1,
            {"field": "sentences", "expected": "texts"},
        ),
        (_lesson(params={"word": "苹果", "sentences": ["苹果真好吃"]}), "wrong_type", 1, {"field": "sentences"}),
        (
            _lesson(params={"word": "苹果", "sentences": ["苹果真好吃", "香蕉"]}),
            "word_missing",
            1,
            {"sentence": "香蕉"},
        ),
        (
            _lesson(params={"word": "苹果", "sentences": ["苹果", "苹果"], "models": ["glove"]}),
            "bad_model",
            1,
            {"model": "glove"},
        ),
        (
            _lesson(params={"word": "苹果", "sentences": ["苹果", "苹果"], "modles": []}),
            "unknown_field",
            1,
            {"field": "modles"},
        ),
        (_lesson(params=[]), "wrong_type", 1, {"field": "params", "expected": "object"}),
        (_lesson(kind="fill_mask", params={"text": "今天天气很好"}), "no_mask", 1, {}),
        (
            _lesson(kind="attention", params={"text": "你好", "layer": "2"}),
            "wrong_type",
            1,
            {"field": "layer", "expected": "int"},
        ),
        (_lesson(kind="attention", params={"text": "你好", "layer": True}), "wrong_type", 1, {"field": "layer"}),
        (_lesson(kind="attention", params={"text": "你好", "head": 0}), "bad_number", 1, {"field": "head"}),
        (_lesson(kind="attention", params={"text": "你好", "model": "elmo"}), "bad_model", 1, {"model": "elmo"}),
        (_lesson(kind="next_char", params={"prompt": "x" * 301}), "too_long", 1, {"field": "prompt"}),
        (_lesson(kind="nsp", params={"a": "", "b": "好"}), "empty_text", 1, {"field": "a"}),
    ],
)
def test_malformed_lessons_name_the_problem(data, code, step, values):
    e = _error(data)
    assert (e.code, e.step) == (code, step), str(e)
    assert values.items() <= e.values.items(), e.values
    if step is not None:
        assert str(e).startswith(f"step {step}: ")


def test_the_second_step_is_named():
    data = _lesson()
    data["steps"].append({**data["steps"][0], "kind": "elmo_lm", "params": {"text": "他去北京", "word": "上海"}})
    e = _error(data)
    assert (e.code, e.step, e.values["word"]) == ("word_missing", 2, "上海")


def test_every_message_is_in_both_catalogues():
    for code in i18n.LANGS:
        cat = i18n.catalogue(code)
        assert all(f"lesson.error.{c}" in cat for c in lesson.MESSAGES)
        assert all(f"lesson.json.{c}" in cat for c in [*lesson.JSON_REASONS, "other"])
        assert all(f"lesson.type.{t}" in cat for t in lesson.TYPE_NAMES)


# -- the views on stand-in encoders ----------------------------------------------------------------------------
def _step(kind, **params) -> Step:
    return Step(kind, {}, {}, {}, None, params)


def test_cosine_view_word2vec_gives_one_vector_the_others_do_not():
    encs = fakes()
    d = lesson_compute.compute(
        _step("cosine", word="苹果", sentences=["苹果很好吃", "苹果手机", "我吃苹果"]), encs.__getitem__
    )
    rows = {m: cs for m, _, cs in d["rows"]}
    assert set(rows) == set(kinds.names(shipped=True)) and all(len(cs) == 2 for cs in rows.values())
    assert rows["word2vec"] == pytest.approx([1.0, 1.0], abs=1e-6)
    assert all(c < 0.999 for m in ("elmo", "bert") for c in rows[m])


def test_cosine_view_unknown_word_and_missing_model():
    encs = fakes()

    def load(name):
        if name == "bert":
            raise FileNotFoundError("no bert here")
        return encs[name]

    d = lesson_compute.compute(
        _step("cosine", word="杜鹃", sentences=["杜鹃花", "山上的杜鹃"], models=["word2vec", "elmo", "bert"]), load
    )
    assert d["oov"] == ["word2vec"] and [m for m, _, _ in d["rows"]] == ["elmo"] and d["failed"][0][0] == "bert"


class _MaskStub:
    def fill_mask(self, text, topk=5):
        return [
            {
                "index": 3,
                "char_offset": 2,
                "candidates": [("的", 0.5), ("京", 0.3), ("方", 0.1), ("天", 0.05), ("下", 0.03), ("上", 0.02)][:topk],
            }
        ]


def test_fill_mask_view_gives_the_answer_rank_beyond_the_top5():
    d = lesson_compute.compute(_step("fill_mask", text="北[MASK]", answer="京"), lambda m: _MaskStub())
    assert [c for c, _ in d["masks"][0]["candidates"]] == ["的", "京", "方", "天", "下"]
    assert d["answer"] == [{"char": "京", "rank": 2, "prob": 0.3}]
    d = lesson_compute.compute(_step("fill_mask", text="北[MASK]", answer="上"), lambda m: _MaskStub())
    assert d["answer"][0]["rank"] == 6  # outside the top 5, still ranked
    assert (
        lesson_compute.compute(_step("fill_mask", text="北[MASK]", answer="龙"), lambda m: _MaskStub())["answer"][0][
            "rank"
        ]
        is None
    )


def test_attention_view_checks_the_layer_and_head_against_the_model():
    encs = fakes()
    d = lesson_compute.compute(_step("attention", text="苹果手机", model="gpt", layer=2, head=1), encs.__getitem__)
    assert d["att"].shape == (len(d["tokens"]),) * 2 and np.allclose(np.triu(d["att"], 1), 0)
    with pytest.raises(LessonError) as e:
        lesson_compute.compute(_step("attention", text="苹果手机", model="gpt", layer=9), encs.__getitem__)
    assert e.value.code == "bad_number" and e.value.values["hi"] == d["n_layers"]


def test_next_char_view():
    d = lesson_compute.compute(_step("next_char", prompt="今天"), fakes().__getitem__)
    assert len(d["candidates"]) == lesson.TOPK


# -- presentation mode: the plots' fonts -----------------------------------------------------------------------
def test_scale_fonts_scales_every_font_and_leaves_the_figure_alone():
    fig = go.Figure(
        go.Bar(x=["a"], y=[1], textfont={"size": 10}),
        layout={
            "height": 300,
            "margin": {"l": 10, "t": 40},
            "title": {"text": "t", "font": {"size": 15}},
            "xaxis": {"tickfont": {"size": 11}},
            "annotations": [{"text": "n", "font": {"size": 13}}],
        },
    )
    before = copy.deepcopy(fig.to_dict())
    d = scale_fonts(fig, 1.5)
    lay = d["layout"]
    assert lay["font"]["size"] == 18  # Plotly's default 12, where the figure set none
    assert (
        lay["title"]["font"]["size"],
        lay["xaxis"]["tickfont"]["size"],
        lay["annotations"][0]["font"]["size"],
        d["data"][0]["textfont"]["size"],
    ) == (20, 16.5, 19.5, 15)  # titles: at most 20 px
    assert lay["height"] > 300 and lay["margin"]["t"] == 60
    assert fig.to_dict() == before
    assert scale_fonts({"data": [], "layout": {"font": {"size": 10}}}, 2)["layout"]["font"]["size"] == 20
    assert scale_fonts({"layout": {"font": {"size": 24}}}, 1.5)["layout"]["font"]["size"] == 24  # never shrinks


def test_positions_step_measures_layer0():
    """The positions step: BERT (rotary) gives a repeated character identical layer-0 vectors, GPT (learned absolute
    positions) does not; a sentence longer than the mechanics view takes is refused when the file is read."""
    from ctxlib import checkpoint, mechanics

    assert lesson.POSITIONS_MAX == mechanics.MAX_CHARS
    les = lesson.load("default")
    step = next(s for s in les.steps if s.kind == "positions")
    assert step.models() == ("bert",)
    if not all((checkpoint.CHECKPOINT_DIR / m / "config.json").is_file() for m in ("bert", "gpt")):
        pytest.skip("shipped BERT/GPT checkpoints missing")
    import ctxlib

    d = lesson_compute.compute(step, ctxlib.load)
    assert d["scheme"] == "rope" and d["layer0_max_diff"] == 0 and d["char"] == "苹"
    g = lesson_compute.compute(lesson.Step("positions", {}, {}, {}, None, {**step.params, "model": "gpt"}), ctxlib.load)
    assert g["scheme"] == "absolute" and g["layer0_max_diff"] > 0.1
    bad = {
        "title": {"zh": "题", "en": "t"},
        "steps": [
            {
                "kind": "positions",
                "title": {"zh": "题", "en": "t"},
                "question": {"zh": "问", "en": "q"},
                "answer": {"zh": "答", "en": "a"},
                "params": {"text": "好" * 41},
            }
        ],
    }
    assert _error(bad).code == "too_long"

"""Built-in example sets, the "sentence | label" parser and the input checks (message ids + values)."""

from collections import Counter

import pytest

from ctxlib.examples import (
    DEFAULT_SET,
    EXAMPLE_SETS,
    MAX_SENTENCES,
    Note,
    Numbers,
    check_inputs,
    example_text,
    format_labelled_lines,
    parse_labelled_lines,
)
from ctxlib.tokens import find_all


@pytest.mark.parametrize("name", sorted(EXAMPLE_SETS))
def test_example_set_is_well_formed(name):
    ex = EXAMPLE_SETS[name]
    assert {"word", "title_zh", "title_en", "sentences"} <= set(ex)
    sents = ex["sentences"]
    assert 10 <= len(sents) <= 16
    for s, lab in sents:
        assert find_all(s, ex["word"]), (name, s)
        assert lab and "|" not in s
    counts = Counter(lab for _, lab in sents)
    assert len(counts) >= 2
    assert max(counts.values()) - min(counts.values()) <= 1  # balanced labels
    assert len({s for s, _ in sents}) == len(sents)  # no duplicates


def test_required_sets_present():
    for w in ("苹果", "活动", "运动", "打", "意思", "杜鹃", "东西", "还", "地", "发展"):
        assert w in EXAMPLE_SETS
    assert DEFAULT_SET == "苹果"


def test_parse_labelled_lines():
    text = "苹果真好吃 | 水果\n\n  苹果手机 ｜ 品牌 \n没有标签的苹果\na|b | c\n空标签 | "
    assert parse_labelled_lines(text) == [
        ("苹果真好吃", "水果"),
        ("苹果手机", "品牌"),
        ("没有标签的苹果", None),
        ("a|b", "c"),
        ("空标签", None),
    ]
    assert parse_labelled_lines("") == []
    assert parse_labelled_lines(None) == []


def test_round_trip():
    sents = EXAMPLE_SETS["活动"]["sentences"]
    assert parse_labelled_lines(format_labelled_lines(sents)) == sents
    assert parse_labelled_lines(example_text("苹果")) == EXAMPLE_SETS["苹果"]["sentences"]


def test_default_set_comes_first():
    assert list(EXAMPLE_SETS)[0] == DEFAULT_SET  # the page falls back to the first set on a bad ?set=


@pytest.mark.parametrize(
    "word,text,levels,ids",
    [
        ("", "x", ["error"], ["inputs.no_word"]),
        ("苹 果", "x", ["error"], ["inputs.bad_word"]),
        ("苹果", "", ["error"], ["inputs.no_sentence"]),
        ("苹果", "苹果很甜" * 1300, ["warning", "info"], ["inputs.input_cut", "inputs.windowed"]),
        ("苹果", "香蕉很甜\n苹果真好吃 | 水果", ["warning"], ["inputs.skipped"]),
        ("苹果", "香蕉很甜\n梨很脆", ["warning", "error"], ["inputs.skipped", "inputs.no_match"]),
        ("苹果", "苹果" + "长" * 200, ["info"], ["inputs.windowed"]),
        ("苹果", "\n".join(f"苹果好{i}" for i in range(45)), ["warning"], ["inputs.too_many"]),
        ("苹果", "\n".join(["苹果好"] * 45), ["info", "warning"], ["inputs.repeated", "inputs.too_many"]),
        ("苹果", "苹果真好吃 | 水果\n苹果手机 | 品牌", [], []),
    ],
)
def test_check_inputs_notes(word, text, levels, ids):
    _, kept, notes = check_inputs(word, text)
    assert [n.level for n in notes] == levels and [n.id for n in notes] == ids
    assert all(isinstance(n, Note) for n in notes)
    assert ("error" in levels) == (not kept)


def test_check_inputs_notes_render_in_both_languages():
    from ctxlib.app.i18n import catalogue, lookup

    _, kept, notes = check_inputs(
        "苹果",
        "\n".join(["香蕉"] * 12 + [f"苹果{i}" + "长" * 200 for i in range(3)] + [f"苹果好{i} | a" for i in range(45)]),
    )
    assert len(kept) == MAX_SENTENCES and [n.id for n in notes] == [
        "inputs.skipped",
        "inputs.windowed",
        "inputs.too_many",
    ]
    for n in notes:
        assert n.id in catalogue("zh") and n.id in catalogue("en")
    en = [lookup(n.id, "en", **n.values) for n in notes]
    zh = [lookup(n.id, "zh", **n.values) for n in notes]
    assert en[0] == "Sentence 1, 2, 3, 4, 5, 6, 7, 8, 9, 10… does not contain '苹果' and was skipped (e.g. '香蕉')."
    assert zh[0] == "第 1、2、3、4、5、6、7、8、9、10… 句不包含“苹果”，已跳过（例如：“香蕉”）。"
    assert en[1] == "Sentence 13, 14, 15 is longer than 120 characters; only the part around the word is used."
    assert zh[2] == f"有 48 个句子，只使用前 {MAX_SENTENCES} 个。"
    _, _, notes = check_inputs("苹果", "苹果很甜" * 1300)
    assert (
        lookup(notes[0].id, "en", **notes[0].values) == "The input has 5,200 characters; only the first 5,000 are used."
    )


def test_numbers_format_spec_is_the_separator():
    assert f"{Numbers((1, 2, 3)):、}" == "1、2、3"
    assert f"{Numbers((1, 2), more=True):, }" == "1, 2…"
    assert f"{Numbers((4,))}" == "4"


def test_check_inputs_tells_of_repeated_sentences():
    word, kept, notes = check_inputs("苹果", "苹果好吃\n香蕉\n苹果手机\n苹果好吃 | 水果\n苹果手机")
    assert len(kept) == 4  # kept: a repeat is harmless, it only sits on top of the first
    (note,) = notes[1:]
    assert note.id == "inputs.repeated" and format(note.values["nums"], ", ") == "4, 5"
    assert format(note.values["first"], ", ") == "1, 3"  # the original line numbers, as the other notes use
    assert not [n for n in check_inputs("苹果", "苹果好吃\n苹果手机")[2] if n.id == "inputs.repeated"]

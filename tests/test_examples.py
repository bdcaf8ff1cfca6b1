"""Built-in example sets and the "sentence | label" parser."""
from collections import Counter

import pytest

from ctxlib.examples import DEFAULT_SET, EXAMPLE_SETS, example_text, format_labelled_lines, parse_labelled_lines
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
        ("苹果真好吃", "水果"), ("苹果手机", "品牌"), ("没有标签的苹果", None), ("a|b", "c"), ("空标签", None)]
    assert parse_labelled_lines("") == []
    assert parse_labelled_lines(None) == []


def test_round_trip():
    sents = EXAMPLE_SETS["活动"]["sentences"]
    assert parse_labelled_lines(format_labelled_lines(sents)) == sents
    assert parse_labelled_lines(example_text("苹果")) == EXAMPLE_SETS["苹果"]["sentences"]

"""The teaching supplement: it parses, it is varied, and its held-out part is never trained on."""

import pytest

from ctxlib import corpus, supplement


@pytest.fixture(scope="module")
def rows():
    return supplement.load()


def test_parses_with_enough_sentences_per_sense(rows):
    q = supplement.quality(rows)
    assert q["words"] >= 42 and q["min_per_sense"] >= 100
    assert q["length"]["outside_6_40"] == 0 and q["exact_duplicates"] == 0
    assert q["near_duplicate_pairs"] <= 0.001 * q["pairs_compared"]
    from ctxlib.examples import EXAMPLE_SETS

    assert {s["word"] for s in EXAMPLE_SETS.values()} <= {r.word for r in rows}  # every app example word
    for r in rows:
        assert r.word in r.sentence


def test_held_out_part_is_disjoint_from_all_training_text(rows):
    train_text = "\n".join(p.text for p in corpus.load("all", "train"))
    held = [r.sentence for r in rows if r.split != "train"]
    assert len(held) > 0.15 * len(rows)
    assert not [s for s in held if s in train_text]
    sup_train = [p for p in corpus.load("supplement", "train")]
    assert len(sup_train) == sum(r.split == "train" for r in rows)


def test_supplement_paragraph_keeps_the_target_as_one_word():
    for p in corpus.supplement()[:300]:
        assert p.sense[0] in p.words


def test_bad_lines_name_the_line():
    with pytest.raises(supplement.SupplementError, match="x:2"):
        supplement.parse_lines(["苹果真好吃\t苹果\t水果", "只有两列\t苹果"], name="x")
    with pytest.raises(supplement.SupplementError, match="not in the sentence"):
        supplement.parse_lines(["今天天气很好\t苹果\t水果"], name="x")


def test_quality_counts_near_duplicates():
    rs = supplement.parse_lines(
        ["我今天买了一个苹果\t苹果\t水果", "我今天买了两个苹果\t苹果\t水果", "苹果公司发布新手机\t苹果\t品牌"]
    )
    q = supplement.quality(rs)
    assert q["near_duplicate_pairs"] == 1 and q["per_word"]["苹果"]["senses"] == {"水果": 2, "品牌": 1}

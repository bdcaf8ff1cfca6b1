"""English example sets (ctxlib/examples_en.py): well formed, first occurrence is the labelled whole word,
one API for both languages, the UI names every set and its origin, and sense_en.tsv holds the same sentences."""

import re
from collections import Counter

import pytest

from ctxlib import examples
from ctxlib.evaluation import heldout
from ctxlib.examples_en import DEFAULT_SET_EN, EXAMPLE_SETS_EN
from ctxlib.tokens import find_all

_NOT_IN_WORD = r"[\w'-]"  # a whole word: no letter, digit, apostrophe or hyphen touches it


def _whole(word: str, flags=0) -> re.Pattern:
    return re.compile(rf"(?<!{_NOT_IN_WORD}){re.escape(word)}(?!{_NOT_IN_WORD})", flags)


@pytest.mark.parametrize("name", sorted(EXAMPLE_SETS_EN))
def test_english_set_is_well_formed(name):
    ex = EXAMPLE_SETS_EN[name]
    assert {"word", "origin", "title_zh", "title_en", "sentences"} <= set(ex)
    assert ex["word"] == name and ex["origin"] == "ctxlab"
    counts = Counter(lab for _, lab in ex["sentences"])
    assert len(counts) == 2, counts  # exactly two senses (or roles)
    assert min(counts.values()) >= 10 and len(set(counts.values())) == 1, counts  # at least 10 each, balanced
    assert len(ex["sentences"]) <= examples.MAX_SENTENCES  # the text box takes the whole set
    assert all(lab and lab.isascii() and len(lab) <= 12 for lab in counts)  # short English sense names


@pytest.mark.parametrize("name", sorted(EXAMPLE_SETS_EN))
def test_first_occurrence_is_the_lowercase_whole_word(name):
    word = EXAMPLE_SETS_EN[name]["word"]
    for s, _ in EXAMPLE_SETS_EN[name]["sentences"]:
        assert 6 <= len(s.split()) <= 20, s
        assert s.isascii() and "\t" not in s and "|" not in s, s
        any_case = _whole(word, re.IGNORECASE).search(s)
        assert any_case, (word, s)  # the word itself, not "banks" or "embankment"
        assert any_case.group(0) == word, s  # lowercase, so not sentence-initial
        spans = find_all(s, word)  # what the app and Encoder.word_vectors use: a plain substring search
        assert spans[0] == any_case.span(), s  # no longer word holds it earlier ("excellent" before "cell")


def test_a_broken_sentence_would_fail():
    """The checks above see what they are meant to: an inflected, a capitalised and a hidden occurrence."""
    assert not _whole("bank", re.IGNORECASE).search("The banks were flooded after the storm.")
    assert _whole("bank", re.IGNORECASE).search("Bank holidays are in May.").group(0) != "bank"
    s = "An excellent cell was drawn."
    assert find_all(s, "cell")[0] != _whole("cell").search(s).span()


def test_twelve_words_and_no_sentence_twice():
    assert len(EXAMPLE_SETS_EN) >= 12
    assert len({ex["word"] for ex in EXAMPLE_SETS_EN.values()}) == len(EXAMPLE_SETS_EN)
    every = [s for sets in (EXAMPLE_SETS_EN, examples.EXAMPLE_SETS) for ex in sets.values() for s, _ in ex["sentences"]]
    assert len(every) == len(set(every)), [s for s, n in Counter(every).items() if n > 1]


def test_one_role_set_labelled_by_role():
    roles = [k for k, ex in EXAMPLE_SETS_EN.items() if {lab for _, lab in ex["sentences"]} == {"noun", "verb"}]
    assert roles == ["play"]


def test_sets_for_and_default_set():
    assert examples.sets_for("zh") is examples.EXAMPLE_SETS
    assert examples.sets_for("en") is EXAMPLE_SETS_EN
    assert DEFAULT_SET_EN == "bank"
    assert examples.default_set("zh") == examples.DEFAULT_SET == next(iter(examples.EXAMPLE_SETS))
    assert examples.default_set("en") == DEFAULT_SET_EN == next(iter(EXAMPLE_SETS_EN))  # a bad ?set= falls back to it
    for bad in ("fr", "", None):
        with pytest.raises(ValueError, match="example sets exist for zh, en"):
            examples.sets_for(bad)
        with pytest.raises(ValueError):
            examples.default_set(bad)


def test_example_text_round_trips_in_both_languages():
    assert examples.example_text("苹果") == examples.example_text("苹果", "zh")
    text = examples.example_text("bank", "en")
    assert examples.parse_labelled_lines(text) == EXAMPLE_SETS_EN["bank"]["sentences"]
    _, kept, notes = examples.check_inputs("bank", text)
    assert kept == EXAMPLE_SETS_EN["bank"]["sentences"] and not notes


def test_every_set_says_it_was_written_for_ctxlab_in_both_ui_languages():
    from ctxlib.app import i18n

    for code in ("en", "zh"):
        cat = i18n.catalogue(code)
        for language in examples._BY_LANGUAGE:
            for ex in examples.sets_for(language).values():
                assert "ctxlab" in cat[f"examples.origin.{ex['origin']}"], (code, ex["word"])
        for k, ex in EXAMPLE_SETS_EN.items():  # the selector's names are the sets' own titles
            assert cat[f"examples.sets_en.{k}"] == ex[f"title_{code}"], (code, k)
    assert set(i18n.catalogue("en")) >= {f"examples.sets_en.{k}" for k in EXAMPLE_SETS_EN}


def test_tsv_holds_the_same_sentences():
    rows = heldout._read_tsv(heldout.EVAL_DIR / "sense_en.tsv")
    want = [(s, ex["word"], lab) for ex in EXAMPLE_SETS_EN.values() for s, lab in ex["sentences"]]
    assert rows == want
    raw = (heldout.EVAL_DIR / "sense_en.tsv").read_text(encoding="utf-8").splitlines()
    assert all(ln.count("\t") == 2 for ln in raw) and len(raw) == len(want)  # no line dropped by the reader


def test_english_sense_set_reader():
    sets = heldout.sense_sets("english")
    assert sets == {k: list(ex["sentences"]) for k, ex in EXAMPLE_SETS_EN.items()}
    assert "english" not in heldout.SENSE_SETS  # the Chinese models' `eval --task senses` does not read it
    with pytest.raises(ValueError, match="english"):
        heldout.sense_sets("klingon")

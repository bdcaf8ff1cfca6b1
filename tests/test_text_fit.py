"""Classroom fit of free text: the repetition penalty and n-gram ban (unit tests on the logits processing), the names
list and its ban, the nearest-word frequency floor with counts, and the training note (ctxlib.writing, ctxlib.lexicon,
ctxlib.model_card, GptEncoder.generate's processing)."""

import numpy as np
import pytest
import torch
from app_fakes import FakeEncoder, FakeGpt

from ctxlib import explore, lexicon, model_card
from ctxlib.models.gpt import penalise_repeats
from ctxlib.viz import elmo as ve
from ctxlib.writing import check_generation, ngram_bans


def test_penalty_divides_positive_and_multiplies_negative_logits_of_seen_tokens_only():
    logits = torch.tensor([2.0, -1.0, 0.5, 3.0, float("-inf")])
    out = penalise_repeats(logits, [0, 1, 1, 4], 2.0)
    assert out.tolist() == [1.0, -2.0, 0.5, 3.0, float("-inf")]
    assert logits.tolist()[:4] == [2.0, -1.0, 0.5, 3.0]  # a new tensor: the model's logits are untouched
    assert penalise_repeats(logits, [0, 1], 1.0) is logits and penalise_repeats(logits, [], 1.3) is logits
    p = out.softmax(-1)
    assert p[0] < logits.softmax(-1)[0] and p[3] > logits.softmax(-1)[3]  # the seen token lost, the unseen gained


def test_ngram_bans_are_the_tokens_that_would_complete_a_present_ngram():
    assert ngram_bans([1, 2, 3, 1, 2], 3) == {3}  # 1 2 3 is present: after "1 2", 3 is banned
    assert ngram_bans([1, 2, 3, 1, 2, 4, 1, 2], 3) == {3, 4}
    assert ngram_bans([1, 2, 3, 1, 2], 2) == {3}  # after "2": 3 followed it before
    assert ngram_bans([5, 5, 5], 2) == {5} and ngram_bans([5, 6], 3) == set()
    assert ngram_bans([1, 2, 3], 0) == set() and ngram_bans([1, 2, 3], 1) == {1, 2, 3}
    assert ngram_bans([], 3) == set() and ngram_bans([7], 3) == set()


@pytest.mark.parametrize(
    "kw, what",
    [
        ({"temperature": 0}, "temperature"),
        ({"top_k": 0}, "top_k"),
        ({"max_new": 0}, "max_new"),
        ({"repetition_penalty": 0}, "repetition_penalty"),
        ({"repetition_penalty": float("nan")}, "repetition_penalty"),
        ({"no_repeat_ngram": -1}, "no_repeat_ngram"),
        ({"no_repeat_ngram": 2.5}, "no_repeat_ngram"),
        ({"no_repeat_ngram": True}, "no_repeat_ngram"),
    ],
)
def test_check_generation_names_the_bad_setting(kw, what):
    ok = {"temperature": 0.8, "top_k": 20, "max_new": 5, "repetition_penalty": 1.3, "no_repeat_ngram": 3}
    check_generation(**ok)
    with pytest.raises(ValueError, match=what):
        check_generation(**{**ok, **kw})


def test_completions_and_banned_next():
    table = lexicon.completions(["李鹏", "李岚清", "江泽民", "x"])
    assert table == {"李": frozenset("鹏"), "李岚": frozenset("清"), "江泽": frozenset("民")}
    longest = max(map(len, table))
    assert lexicon.banned_next("总理李", table, longest) == {"鹏"}
    assert lexicon.banned_next("总理李岚", table, longest) == {"清"}
    assert lexicon.banned_next("总理", table, longest) == set() and lexicon.banned_next("", table, longest) == set()


def test_person_names_come_from_the_nr_tags():
    names = lexicon.person_names()
    assert {"江泽民", "李鹏", "钱其琛"} <= set(names[:20])  # joined surname + given name, most frequent first
    assert all(len(n) >= 2 for n in names) and "江" not in names
    assert "高原" not in names  # tagged nr twice, but an ordinary word far more often
    assert len(names) > 1000


def test_counts_for_follows_the_training_text():
    built_in = {"run": {"sources": "pd+reviews+supplement (train split)", "corpus": None}}
    assert lexicon.counts_for(built_in) is lexicon.word_counts() and lexicon.counts_for({}) is lexicon.word_counts()
    assert lexicon.counts_for({"run": {"corpus": "/data/my.txt", "sources": "user"}}) is None
    c = lexicon.word_counts()
    assert c["的"] > c["苹果"] > 0 and "龘靐" not in c


def test_nearest_rows_floor_drops_rare_words_and_shows_counts():
    words = ["苹果", "香蕉", "手机", "电脑"]
    M = np.array([[1.0, 0.0], [0.8, 0.6], [0.0, 1.0], [-1.0, 0.0]])
    counts = {"苹果": 300, "香蕉": 3, "手机": 150}
    assert explore.nearest_rows(words, M, np.array([[1.0, 0.0]]), "x", topn=3) == ["苹果 1.00  香蕉 0.80  手机 0.00"]
    assert explore.nearest_rows(words, M, np.array([[1.0, 0.0]]), "x", 3, counts, 100) == [
        "苹果 1.00 (300)  手机 0.00 (150)"
    ]
    assert explore.nearest_rows(words, M, np.array([[1.0, 0.0]]), "苹果", 3, counts, 0) == [
        "香蕉 0.80 (3)  手机 0.00 (150)  电脑 -1.00 (0)"
    ]
    assert explore.nearest_rows(words, M, np.array([[1.0, 0.0]]), "x", 3, counts, 10**6) == [""]


def test_encoder_nearest_words_and_elmo_rows_take_the_floor():
    enc = FakeEncoder("elmo", 3)
    v = enc.type_vectors(1)[1][0] * 3
    counts = {w: (1000 if i % 2 else 1) for i, w in enumerate(enc.vocab_words())}
    all_words = [w for w, _ in enc.nearest_words(v, 1, topn=6)]
    kept = [w for w, _ in enc.nearest_words(v, 1, topn=6, counts=counts, min_count=100)]
    assert len(kept) == 6 and all(counts[w] == 1000 for w in kept) and any(counts[w] == 1 for w in all_words)
    assert kept == [w for w in [w for w, _ in enc.nearest_words(v, 1, topn=len(counts))] if counts[w] == 1000][:6]
    layers = np.stack([enc.type_vectors(j)[1][:2] for j in range(3)])  # (3 layers, 2 tokens, dim)
    rows = ve.nearest_rows(enc, layers, ["a", "b", "c"], 0, counts=counts, min_count=100)
    assert all(" (1,000)" in r and " (1)" not in r for r in rows.values())


def test_model_card_reads_the_summary_and_counts_parameters():
    g = FakeGpt()
    f = model_card.facts(g)
    assert f["sources"] == ["pd", "reviews", "supplement"] and f["layers"] == 4 and f["parameters"] is None
    assert model_card.training_sources({"run": {"corpus": "x.txt", "sources": "user"}}) == ["user"]
    assert model_card.training_sources({}) == []
    g.model = torch.nn.Linear(3, 2)  # 3*2 + 2 parameters, counted from the tensors
    assert model_card.facts(g)["parameters"] == 8
    assert "People's Daily" in model_card.describe(g) and "8 parameters" in model_card.describe(g)


def test_kept_out_adds_the_byline_words_a_made_up_name_follows():
    out = lexicon.kept_out()
    assert set(lexicon.BYLINE_WORDS) <= set(out) and set(lexicon.person_names()) <= set(out)
    table = lexicon.completions(out)
    # the shipped GPT's seed-0 continuation of 今天天气 was "(新华社记者李晓英摄)": 记 is refused after 新华社, and 者 after 记
    assert "者" in lexicon.banned_next("新华社记", table, max(map(len, table)))
    assert "社" in lexicon.banned_next("(新华", table, max(map(len, table)))

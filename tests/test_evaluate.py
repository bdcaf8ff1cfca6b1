"""Held-out figures: pair ranking against a brute-force reference, the three sense sets, the cloze set."""

import itertools

import numpy as np
import pytest

from ctxlib import supplement
from ctxlib.evaluation import heldout


def _pair_ranking_reference(X, y):
    X = X / np.linalg.norm(X, axis=1, keepdims=True)
    wins = total = 0.0
    for a, b, c in itertools.permutations(range(len(X)), 3):
        if y[a] == y[b] and y[a] != y[c]:
            ab, ac = X[a] @ X[b], X[a] @ X[c]
            wins += 1.0 if ab > ac else (0.5 if ab == ac else 0.0)
            total += 1
    return wins / total


def test_pair_ranking_matches_brute_force():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(11, 5))
    y = ["a"] * 4 + ["b"] * 4 + ["c"] * 3
    assert heldout.pair_ranking(X, y) == pytest.approx(_pair_ranking_reference(X, y))
    sep = np.repeat(np.eye(3), [4, 4, 3], axis=0) + 0.01 * rng.normal(size=(11, 3))
    assert heldout.pair_ranking(sep, y) == 1.0
    assert heldout.pair_ranking(np.ones((6, 3)), ["a"] * 3 + ["b"] * 3) == 0.5  # identical vectors: ties


def test_sense_sets_are_separate_and_labelled():
    sets = {n: heldout.sense_sets(n) for n in heldout.SENSE_SETS}
    assert len(sets["examples"]) == 12 and len(sets["frozen"]) == 10
    assert sum(len(v) for v in sets["frozen"].values()) >= 100
    sup_words = {r.word for r in supplement.load()}
    assert not set(sets["frozen"]) & sup_words  # the frozen set is for words outside the supplement
    held = {t for v in sets["supplement"].values() for t, _ in v}
    assert all(supplement.split_of(t) != "train" for t in held)


def test_cloze_items_have_one_mask_and_one_character():
    items = heldout.cloze_items()
    assert len(items) >= 100
    assert {d for _, _, d in items} == {"news", "review", "daily"}
    assert all(t.count("[MASK]") == 1 and len(a) == 1 for t, a, _ in items)


def test_sense_scores_of_a_context_free_model_are_chance():
    class Static:
        def word_vectors(self, texts, word):
            return np.ones((len(texts), 1, 4), np.float32)  # one vector per type, as word2vec

    r = heldout.sense_scores(Static(), "examples")
    assert r["pair_ranking"] == [0.5]
    assert r["best_accuracy"] < 0.6

"""Task heads: the eval JSON schema and the live mix training (tiny ELMo, tiny samples)."""

import json

import numpy as np
import pytest

import ctxlib
from ctxlib.evaluation import task_eval, tasks

pytestmark = pytest.mark.usefixtures("one_thread")


def test_task_sentences():
    w, y = tasks.task_sentences("ner", "test", 30, seed=0)
    assert len(w) == 30 and all(len(a) == len(b) for a, b in zip(w, y))
    assert set(x for ys in y for x in ys) <= {"O", "person", "place", "organisation"}
    w2, y2 = tasks.task_sentences("sentiment", "train", 20, seed=0)
    assert len(w2) == 20 and set(y2) <= {0, 1}
    assert tasks.task_sentences("ner", "test", 30, seed=0)[0] == w  # seeded
    with pytest.raises(ValueError):
        tasks.task_sentences("parse", "train", 5)


def test_task_sentences_are_drawn_once_and_shared_by_pos_and_ner(monkeypatch):
    w, tags = tasks.task_sentences("pos", "test", 25, seed=3)
    monkeypatch.setattr("ctxlib.corpus.load", lambda *a, **k: pytest.fail("the sample was drawn again"))
    w2, names = tasks.task_sentences("ner", "test", 25, seed=3)  # the same People's Daily sample, NER labels
    assert w2 == w and [len(x) for x in names] == [len(x) for x in tags]
    assert all(n == tasks.NER_MAP.get(t, "O") for ns, ts in zip(names, tags) for n, t in zip(ns, ts))
    w[0].append("x")
    tags[0][0] = "edited"
    again, tags2 = tasks.task_sentences("pos", "test", 25, seed=3)
    assert again[0] != w[0] and tags2[0][0] != "edited"  # callers get copies


def test_run_eval_schema(elmo_tiny, w2v_tiny, tmp_path):
    out = tmp_path / "eval_pos.json"
    r = task_eval.run_eval(
        str(elmo_tiny),
        "pos",
        device="cpu",
        out=out,
        n_train=40,
        n_test=20,
        epochs=1,
        probe_epochs=1,
        word2vec=str(w2v_tiny),
    )
    saved = json.loads(out.read_text(encoding="utf-8"))
    for k in (
        "task",
        "metric",
        "score",
        "per_layer_score",
        "mix_weights",
        "gamma",
        "expected_layer",
        "word2vec_score",
        "input_score",
        "concat_score",
        "baseline_score",
        "n_train",
        "n_test",
        "seconds",
    ):
        assert k in saved, k
    assert saved["task"] == "pos" and saved["n_train"] == 40 and saved["n_test"] == 20
    assert len(saved["per_layer_score"]) == 3 and all(0 <= s <= 1 for s in saved["per_layer_score"])
    assert sum(saved["mix_weights"]) == pytest.approx(1.0, abs=1e-3)
    assert 0 <= saved["expected_layer"] <= 2
    assert saved["expected_layer"] == pytest.approx(sum(j * s for j, s in enumerate(saved["mix_weights"])), abs=1e-3)
    assert 0 <= saved["word2vec_score"] <= 1 and 0 <= saved["score"] <= 1
    assert r["score"] == saved["score"]


def test_run_eval_sentiment_without_word2vec(elmo_tiny, tmp_path):
    r = task_eval.run_eval(
        str(elmo_tiny),
        "sentiment",
        device="cpu",
        out=tmp_path / "s.json",
        n_train=30,
        n_test=20,
        epochs=1,
        probe_epochs=1,
        word2vec=str(tmp_path / "missing"),
    )
    assert r["metric"] == "accuracy" and r["word2vec_score"] is None and "word2vec_note" in r


def test_train_mix_live_and_l2(elmo_tiny):
    enc = ctxlib.load(elmo_tiny)
    seen = []
    r = tasks.train_mix_live(
        enc,
        "pos",
        l2=0.0,
        n_train=60,
        n_test=20,
        max_seconds=30,
        seed=0,
        callback=lambda step, total, w: seen.append((step, total, w)),
    )
    assert seen and seen[-1][0] == len(r["history"]) and len(seen[-1][2]) == 3
    assert sum(r["mix_weights"]) == pytest.approx(1.0, abs=1e-5) and 0 <= r["score"] <= 1
    free = np.array(r["mix_weights"])
    big = tasks.train_mix_live(enc, "pos", l2=1000.0, n_train=60, n_test=20, max_seconds=30, seed=0)
    uni = np.array(big["mix_weights"])
    assert np.abs(uni - 1 / 3).max() < 0.01  # the regulariser pulls the weights to uniform
    assert np.abs(free - 1 / 3).max() > np.abs(uni - 1 / 3).max()


def test_mix_expected_s_counts_the_feature_extraction_only_until_the_features_are_in_memory(monkeypatch):
    class Enc:
        path, name = None, "e"

    enc = Enc()
    monkeypatch.setattr(tasks, "_FEATURES", {})
    assert tasks.mix_expected_s(enc, "ner", 20) == 20 + tasks.FEATURES_S
    for split, n in (("train", 200), ("test", 200)):
        tasks._FEATURES[tasks._features_key(enc, "pos", split, n, 0)] = []
    assert tasks.mix_expected_s(enc, "ner", 20) == 20.0  # NER reads POS's sentences: the same features
    assert tasks.mix_expected_s(enc, "sentiment", 20) == 20 + tasks.FEATURES_S

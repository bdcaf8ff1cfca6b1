"""Plot builders for the ELMo page (no streamlit), and the live mix training on a tiny trained ELMo."""

import json

import numpy as np
import pytest

from ctxlib import analysis, records
from ctxlib.app import i18n
from ctxlib.evaluation import tasks
from ctxlib.vecmath import cosine_matrix
from ctxlib.viz import elmo as ve
from ctxlib.viz import elmo_flow as vf

# the labels the page passes in (translated there; see ctxlib/app/strings/*/elmo.toml, [arch])
ARCH_EN = {
    "token_vector": "x (char-CNN+highway)",
    "words": "words",
    "char_cnn": "char-CNN",
    "forward": "forward",
    "backward": "backward",
    "has_read": "has read",
    "mix": "task mix",
    "fwd_lm": "forward LM",
    "bwd_lm": "backward LM",
    "off": "off",
    "window": "showing words {first}–{last} of {n}",
}
ARCH_ZH = {
    **ARCH_EN,
    "forward": "前向",
    "backward": "后向",
    "has_read": "已读入",
    "window": "显示第 {first}–{last} 个词（共 {n} 个）",
}


def _layers(T=5, d=4, seed=0):
    return np.random.default_rng(seed).standard_normal((3, T, 2 * d)).astype(np.float32)


def test_split_states_gives_2L_plus_1_vectors():
    lay = _layers()
    lay[0, :, 4:] = lay[0, :, :4]  # the token layer is duplicated, as encode() returns it
    st = vf.split_states(lay)
    assert list(st) == ["x", "f1", "b1", "f2", "b2"]
    np.testing.assert_array_equal(st["f2"], lay[2, :, :4])
    np.testing.assert_array_equal(st["b1"], lay[1, :, 4:])
    assert ve.vector_names(2, ARCH_ZH) == [
        "x (char-CNN+highway)",
        "h1→ (前向)",
        "h1← (后向)",
        "h2→ (前向)",
        "h2← (后向)",
    ]
    np.testing.assert_array_equal(ve.word_vectors(lay, 3), np.stack([v[3] for v in st.values()]))


def test_catalogue_has_the_labels_the_page_builds_by_key():
    for code in i18n.LANGS:
        cat = i18n.catalogue(code)
        assert all(f"elmo.arch.{k}" in cat for k in vf.ARCH_LABELS), code
        assert all(f"elmo.usage.{k}" in cat for k in ve.USAGE_KEYS), code
        assert cat["elmo.arch.window"].format(first=1, last=14, n=40)  # a template the figure fills


def test_architecture_figure_colours_what_reaches_the_word():
    toks = ["我", "用", "<script>", "手机", "打", "电话"]
    fig = vf.architecture_figure(toks, _layers(T=6), word_index=2, labels=ARCH_ZH)
    cells = {tr.hovertemplate.split(" @")[0]: tr for tr in fig.data if tr.mode == "markers" and tr.hovertemplate}
    fwd = [k for k in cells if "→" in k and "biLSTM 1" in k][0]
    bwd = [k for k in cells if "←" in k and "biLSTM 2" in k][0]
    # forward states reach the word only from positions <= 2, backward only from >= 2
    assert [c != vf.OFF for c in cells[fwd].marker.color] == [True, True, True, False, False, False]
    assert [c != vf.OFF for c in cells[bwd].marker.color] == [False, False, True, True, True, True]
    words = [tr for tr in fig.data if tr.mode == "text"][0]
    assert "&lt;script&gt;" in words.text and "<script>" not in words.text
    assert "已读入" in cells[fwd].hovertemplate and cells[fwd].hovertemplate.startswith("biLSTM 1 → 前向")
    # a long sentence is drawn in a window around the word
    long = vf.architecture_figure(
        [str(i) for i in range(40)], _layers(T=40), word_index=30, labels=ARCH_EN, max_tokens=14
    )
    xs = [tr for tr in long.data if tr.mode == "text"][0].x
    assert len(xs) == 14 and 30 in xs
    assert any(a.text == f"showing words {xs[0] + 1}–{xs[-1] + 1} of 40" for a in long.layout.annotations)


def test_layer_vectors_cosines_and_lm_bars():
    v = np.array([[1, 0], [0, 1], [1, 1], [-1, 0], [2, 0]], np.float32)
    c = cosine_matrix(v)
    np.testing.assert_allclose(np.diag(c), 1.0, atol=1e-6)
    assert c[0, 3] == pytest.approx(-1.0) and c[0, 4] == pytest.approx(1.0) and c[0, 1] == pytest.approx(0.0)
    fig = ve.layer_vectors_figure(v, ve.vector_names(2, ARCH_EN), "苹果")
    assert np.asarray(fig.data[1].z).shape == (5, 5)
    bars = ve.lm_bars_figure([("苹果", 0.5), ("<b>", 0.1)], [("香蕉", 0.3)], "苹果", ("fwd", "bwd"))
    assert bars.data[0].marker.color[-1] == "#d62728"  # the real word (largest, drawn last = on top) in red
    assert all("<b>" not in y for y in bars.data[0].y)
    lm = {"forward": [("<S>", 0.4), ("苹果", 0.3), ("梨", 0.1)], "backward": [("</S>", 0.5), ("香蕉", 0.2)]}
    assert ve.lm_panels(lm, ["我", "用", "苹果", "手机"], 2, k=1) == ([("苹果", 0.3)], [("香蕉", 0.2)], "我用", "手机")


class _FakeEncoder:
    def nearest_words(self, vec, layer, topn, exclude, counts=None, min_count=0):
        return [(w, 0.5 + layer / 10) for w in ("苹果", "梨", "香蕉") if w not in exclude][:topn]


def test_nearest_rows_and_live_summary():
    rows = ve.nearest_rows(_FakeEncoder(), _layers(T=4), ["x", "h1", "h2"], 1, exclude=("苹果",), topn=2)
    assert rows == {"x": "梨 0.50  香蕉 0.50", "h1": "梨 0.60  香蕉 0.60", "h2": "梨 0.70  香蕉 0.70"}
    assert ve.live_summary({"mix_weights": [0.6, 0.3, 0.1], "gamma": 1.5, "score": 0.8}) == {
        "weights": "0.600, 0.300, 0.100",
        "gamma": 1.5,
        "score": 0.8,
    }
    empty = ve.live_summary({})
    assert empty["weights"] == "" and np.isnan(empty["gamma"]) and np.isnan(empty["score"])


def test_mix_weights_expected_layer_and_eval_files(tmp_path):
    assert analysis.expected_layer([1, 0, 0]) == 0 and analysis.expected_layer([0, 0, 1]) == 2
    assert analysis.expected_layer([1 / 3] * 3) == pytest.approx(1.0)
    ev = {
        "task": "pos",
        "metric": "accuracy",
        "score": 0.9,
        "per_layer_score": [0.8, 0.85, 0.83],
        "mix_probe_score": 0.88,
        "mix_weights": [0.5, 0.3, 0.2],
        "gamma": 1.2,
        "expected_layer": 0.7,
        "word2vec_probe_score": 0.7,
        "word2vec_score": 0.75,
        "input_score": 0.9,
        "concat_score": 0.91,
        "baseline_score": 0.6,
    }
    (tmp_path / "eval_pos.json").write_text(json.dumps(ev), encoding="utf-8")
    (tmp_path / "eval_ner.json").write_text("{broken", encoding="utf-8")
    found, missing = records.read_evals(tmp_path, ["pos", "ner", "sentiment"])
    assert list(found) == ["pos"] and missing == ["ner", "sentiment"]
    fig = ve.mix_weights_figure(found, ["x", "h1", "h2"], {"pos": "POS"})
    assert list(fig.data[0].y) == [0.5, 0.3, 0.2] and "γ=1.20" in fig.data[0].name
    probe = ve.probe_scores_figure(records.EvalResult.from_dict(ev), ["x", "h1", "h2"], {"mix": "mix"})
    assert list(probe.data[0].y) == [0.7, 0.8, 0.85, 0.83, 0.88]  # word2vec probe first
    assert probe.layout.yaxis.title.text == "accuracy"
    # no probe on word2vec or on the mix: those bars are left out (the task model's scores are other measures)
    bare = records.EvalResult.from_dict(
        {k: v for k, v in ev.items() if k not in ("word2vec_probe_score", "mix_probe_score")}
    )
    assert list(ve.probe_scores_figure(bare, ["x", "h1", "h2"], {}).data[0].y) == [0.8, 0.85, 0.83]
    assert ve.usage_tasks(found) == ["pos"] and ve.usage_tasks({"pos": bare, "ner": records.EvalResult("ner")}) == [
        "pos"
    ]
    usage = ve.usage_figure(found, {"pos": "POS"}, {})
    assert [tr.y[0] for tr in usage.data] == [0.6, 0.75, 0.9, 0.91]
    assert records.read_evals(None, ["pos"]) == ({}, ["pos"])


def test_history_weights_accepts_lists_and_dicts():
    steps, w, _ = ve.history_weights([[0.2, 0.3, 0.5], [0.1, 0.2, 0.7]])
    assert steps == [0, 1] and w.shape == (2, 3)
    steps, w, g = ve.history_weights([{"step": 5, "weights": [1, 0, 0], "gamma": 2.0}])
    assert steps == [5] and g == [2.0]
    fig = ve.mix_history_figure([[0.2, 0.3, 0.5], [0.1, 0.2, 0.7]], ["x", "h1", "h2"])
    assert len(fig.data) == 3


def build_tiny_elmo():
    """A tiny ELMo (the 'tiny' preset's sizes, vocabularies from 200 paragraphs) with untrained weights: the live
    training only fits the ScalarMix and the head, so the biLM need not be trained (training it takes minutes
    on a busy 2-core machine)."""
    from dataclasses import asdict

    import torch

    from ctxlib import corpus
    from ctxlib.models import elmo
    from ctxlib.training import elmo as elmo_training

    sents = [p.words for p in corpus.load("pd", "train")[:200]]
    cfg = elmo.ElmoConfig(**elmo_training.PRESETS["tiny"].model)
    wv, cv = elmo_training.build_vocabs(sents, cfg)
    cfg.n_chars, cfg.vocab_size = len(cv), min(cfg.vocab_size, len(wv))
    cfg.cutoffs = [c for c in cfg.cutoffs if c < cfg.vocab_size]
    torch.manual_seed(0)
    return elmo.ElmoEncoder("elmo-tiny", asdict(cfg), {}, None, elmo.ElmoLM(cfg), wv, cv)


@pytest.fixture(scope="module")
def tiny_elmo():
    return build_tiny_elmo()


def test_live_mix_training_moves_weights_and_l2_pulls_to_uniform(tiny_elmo):
    seen = []
    # (its wall time is measured by bench/live_mix_timing.py, not asserted here: a busy machine would flake)
    res = tasks.train_mix_live(
        tiny_elmo,
        "pos",
        0.0,
        n_train=60,
        n_test=60,
        max_seconds=4,
        callback=lambda s, n, w: seen.append((s, n, list(w))),
    )
    assert seen and seen[-1][0] <= seen[-1][1]
    w = np.array(res["mix_weights"])
    assert w.shape == (3,) and w.sum() == pytest.approx(1.0, abs=1e-5)
    steps, hist, _ = ve.history_weights(res["history"])
    assert len(steps) == len(seen) and np.abs(hist[-1] - 1 / 3).max() > 0.02  # the weights moved off uniform
    strong = tasks.train_mix_live(tiny_elmo, "pos", 10.0, n_train=60, n_test=60, max_seconds=4)
    assert np.abs(np.array(strong["mix_weights"]) - 1 / 3).max() < np.abs(w - 1 / 3).max()
    assert np.abs(np.array(strong["mix_weights"]) - 1 / 3).max() < 0.02


def test_context_label_keeps_the_words_next_to_the_position():
    assert ve.context_label([], "left") == "∅"
    assert ve.context_label(["我", "用"], "left") == "我用"
    assert ve.context_label(list("一二三四五六七八九十"), "left", 4) == "…七八九十"
    assert ve.context_label(list("一二三四五六七八九十"), "right", 4) == "一二三四…"

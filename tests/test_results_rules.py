"""The Results page's verdict rule, claim by claim, on constructed eval files in the real format
(checkpoints/<model>/eval_*.json, config.json, vocab.json in a tmp folder): every claim placed on each side of the
rule (reproduced, partly, not reproduced, a tie just inside and a win just outside the margin, a missing figure),
with which figure sits on which side; and the outside models' folders (extra_dirs)."""

import json

import pytest

from ctxlib import results
from ctxlib.verdict import Comparison, best_layers, counts, verdict

LAYERS = ["char-CNN token layer", "biLSTM layer 1", "biLSTM layer 2"]


def _senses(pair_sup, pair_frozen, examples=(0.5, 0.6, 0.7), names=LAYERS):
    sets = {
        "examples": {"pair_ranking": list(examples), "accuracy": list(examples)},
        "supplement": {"pair_ranking": list(pair_sup), "accuracy": list(pair_sup)},
        "frozen": {"pair_ranking": list(pair_frozen), "accuracy": list(pair_frozen)},
    }
    return {"task": "senses", "layer_names": list(names), "sets": sets}


def _task(task, score, w2v, base, concat, expected, per_layer):
    return {
        "task": task,
        "score": score,
        "input_score": score,
        "word2vec_score": w2v,
        "baseline_score": base,
        "concat_score": concat,
        "expected_layer": expected,
        "per_layer_score": per_layer,
        "n_test": 1000,
        "layer_names": LAYERS,
    }


BASE = {  # every measure of every claim wins, each by at least two points
    ("word2vec", "eval_senses.json"): _senses([0.5], [0.5], examples=[0.5], names=["type vector (word2vec)"]),
    ("elmo", "eval_senses.json"): _senses([0.5, 0.6, 0.8], [0.5, 0.6, 0.75]),
    ("bert", "eval_senses.json"): _senses([0.5, 0.6, 0.8], [0.5, 0.6, 0.75]),
    ("gpt", "eval_senses.json"): _senses([0.5, 0.6, 0.8], [0.5, 0.6, 0.75]),
    ("elmo", "eval_pos.json"): _task("pos", 0.90, 0.85, 0.80, 0.89, 0.7, [0.7, 0.88, 0.80]),
    ("elmo", "eval_ner.json"): _task("ner", 0.88, 0.84, 0.75, 0.87, 1.0, [0.5, 0.8, 0.8]),
    ("elmo", "eval_sentiment.json"): _task("sentiment", 0.81, 0.78, 0.77, 0.80, 1.5, [0.6, 0.7, 0.75]),
    ("bert", "eval_sentiment.json"): {"task": "sentiment", "score": 0.83, "score_from": "finetune", "n_train": 3000},
    ("bert", "config.json"): {
        "config": {"layers": 4, "hidden": 256},
        "summary": {"steps": 100, "valid": {"mlm_top1": 0.4, "nsp_acc": 0.85}},
    },
    ("bert", "vocab.json"): {"specials": ["[PAD]", "[UNK]"], "counts": [0, 0] + [1] * 10},  # always-one: 0.1
    ("bert", "eval_nsp.json"): {
        "task": "nsp",
        "n": 100,
        "order_share": 0.9,
        "rows": {"true": {"mean_p": 0.8}, "swapped": {"mean_p": 0.75}, "random": {"mean_p": 0.3}},
    },
}


@pytest.fixture
def root(tmp_path):
    d = tmp_path / "checkpoints"
    for (model, name), data in BASE.items():
        (d / model).mkdir(parents=True, exist_ok=True)
        (d / model / name).write_text(json.dumps(data), encoding="utf-8")
    return d


def _edit(root, model, name, fn):
    path = root / model / name
    d = json.loads(path.read_text(encoding="utf-8"))
    fn(d)
    path.write_text(json.dumps(d), encoding="utf-8")


def _set(root, model, name, value, *path):
    def fn(d):
        for k in path[:-1]:
            d = d[k]
        if value is None:
            del d[path[-1]]
        else:
            d[path[-1]] = value

    _edit(root, model, name, fn)


def _claim(root, key, **kw):
    return {c.key: c for c in results.claims(root, **kw)}[key]


def _outcomes(c):
    return [x.outcome for x in c.comparisons]


def test_the_base_files_reproduce_every_claim(root):
    for c in results.claims(root):
        assert c.verdict == "reproduced" and c.comparisons and not c.missing_figures, (c.key, _outcomes(c))
    assert [len(c.comparisons) for c in results.claims(root)] == [12, 3, 3, 6, 1, 3, 2]


# ---- the rule itself ----


def _c(a, b, margin=0.01, **kw):
    return Comparison("task_score", "pos", "elmo", a, "word2vec", b, margin, **kw)


def test_outcomes_at_the_margin():
    assert [_c(0.81, 0.80).outcome, _c(0.8099, 0.80).outcome, _c(0.80, 0.80).outcome] == ["win", "tie", "tie"]
    assert [_c(0.7901, 0.80).outcome, _c(0.79, 0.80).outcome, _c(None, 0.8).outcome] == ["tie", "loss", "missing"]
    assert [_c(0.75, 0.75, margin=0.0).outcome, _c(0.7499, 0.75, margin=0.0).outcome] == ["win", "loss"]  # no tie zone
    assert counts([_c(0.9, 0.8), _c(0.8, 0.8), _c(0.7, 0.8), _c(None, 0.8)]) == {
        "win": 1,
        "tie": 1,
        "loss": 1,
        "missing": 1,
    }
    assert (
        verdict([_c(0.9, 0.8), _c(0.8, 0.8)]) == "partly" and verdict([_c(0.8, 0.8), _c(0.7, 0.8)]) == "not_reproduced"
    )
    assert verdict([_c(0.9, 0.8), _c(None, 0.8)]) == "incomplete" and verdict([_c(None, None)]) == "missing"


def test_best_layers_and_their_ties():
    assert best_layers([0.7, 0.88, 0.80]) == (1, 1, 1)
    assert best_layers([0.7, 0.88, 0.8701]) == (1, 1, 2)  # 0.0099 below the top: tied for best
    assert best_layers([0.7, 0.88, 0.87]) == (1, 1, 1)  # a full point below: not tied
    assert best_layers([]) is None and best_layers(["x"]) is None
    layer = lambda a, b, ar=None, br=None: Comparison("best_layer", "x", "a", a, "b", b, 1, a_range=ar, b_range=br)  # noqa: E731
    assert layer(2, 1).outcome == "win" and layer(1, 1).outcome == "tie" and layer(0, 1).outcome == "loss"
    assert layer(2, 1, (2, 2), (1, 2)).outcome == "tie"  # overlapping tied sets
    assert layer(2, 0, (2, 2), (0, 1)).outcome == "win" and layer(1, 2, (0, 1), (2, 2)).outcome == "loss"


# ---- claim 1: static vs contextual ----


def test_static_vs_contextual(root):
    c = _claim(root, "static_vs_contextual")
    x = c.comparisons[0]
    assert (x.measure, x.where, x.a, x.a_value, x.b, x.b_value) == (
        "pair_ranking",
        "supplement",
        "elmo",
        0.8,
        "word2vec",
        0.5,
    )
    assert (
        x.a_source
        == "checkpoints/elmo/eval_senses.json#/sets/supplement/pair_ranking[argmax /sets/examples/pair_ranking]"
    )
    assert x.b_source == "checkpoints/word2vec/eval_senses.json#/sets/supplement/pair_ranking[0]"
    assert [(y.a, y.where, y.measure) for y in c.comparisons[:4]] == [
        ("elmo", "supplement", "pair_ranking"),
        ("elmo", "supplement", "accuracy"),
        ("elmo", "frozen", "pair_ranking"),
        ("elmo", "frozen", "accuracy"),
    ]
    _set(root, "elmo", "eval_senses.json", [0.5, 0.9, 0.7], "sets", "examples", "pair_ranking")  # layer 1 chosen
    assert _claim(root, "static_vs_contextual").comparisons[0].a_value == 0.6
    _set(root, "gpt", "eval_senses.json", [0.5, 0.6, 0.5099], "sets", "frozen", "pair_ranking")  # just inside
    c = _claim(root, "static_vs_contextual")
    assert c.verdict == "partly" and _outcomes(c).count("tie") == 1
    _set(root, "gpt", "eval_senses.json", [0.5, 0.6, 0.51], "sets", "frozen", "pair_ranking")  # just outside
    assert _claim(root, "static_vs_contextual").verdict == "reproduced"


def test_static_vs_contextual_lost_and_missing(root):
    for where in ("supplement", "frozen"):  # word2vec above every contextual model: swapped sides lose
        for measure in ("pair_ranking", "accuracy"):
            _set(root, "word2vec", "eval_senses.json", [0.9], "sets", where, measure)
    c = _claim(root, "static_vs_contextual")
    assert c.verdict == "not_reproduced" and set(_outcomes(c)) == {"loss"}
    (root / "gpt" / "eval_senses.json").unlink()
    c = _claim(root, "static_vs_contextual")
    assert c.verdict == "incomplete" and _outcomes(c)[8:] == ["missing"] * 4
    assert all(f.startswith("checkpoints/gpt/eval_senses.json#/") for f in c.missing_figures)
    assert ("checkpoints/gpt/eval_senses.json", "python -m ctxlib eval gpt --task senses") in c.missing


# ---- claim 2: ELMo vs word2vec ----


def test_elmo_vs_word2vec(root):
    c = _claim(root, "elmo_vs_word2vec")
    assert [(x.where, x.a_value, x.b_value) for x in c.comparisons] == [
        ("pos", 0.90, 0.85),
        ("ner", 0.88, 0.84),
        ("sentiment", 0.81, 0.78),
    ]
    assert c.comparisons[1].a_source.endswith("elmo/eval_ner.json#/score")
    assert c.comparisons[1].b_source.endswith("elmo/eval_ner.json#/word2vec_score")
    _set(root, "elmo", "eval_pos.json", 0.8901, "word2vec_score")  # ELMo ahead by 0.0099: a tie
    c = _claim(root, "elmo_vs_word2vec")
    assert c.verdict == "partly" and _outcomes(c) == ["tie", "win", "win"]
    _set(root, "elmo", "eval_pos.json", 0.89, "word2vec_score")  # a full point: a win
    assert _claim(root, "elmo_vs_word2vec").verdict == "reproduced"
    _set(root, "elmo", "eval_pos.json", 0.85, "score")  # swap the two figures: the win becomes a loss
    _set(root, "elmo", "eval_pos.json", 0.90, "word2vec_score")
    assert _outcomes(_claim(root, "elmo_vs_word2vec")) == ["loss", "win", "win"]
    for t, s in (("ner", 0.88), ("sentiment", 0.81)):
        _set(root, "elmo", f"eval_{t}.json", s + 0.02, "word2vec_score")
    assert _claim(root, "elmo_vs_word2vec").verdict == "not_reproduced"


def test_elmo_vs_word2vec_missing_figure(root):
    _set(root, "elmo", "eval_ner.json", None, "word2vec_score")  # the file is there, the figure is not
    c = _claim(root, "elmo_vs_word2vec")
    assert c.verdict == "incomplete" and _outcomes(c) == ["win", "missing", "win"]
    assert c.missing_figures == ["checkpoints/elmo/eval_ner.json#/word2vec_score"] and not c.missing


# ---- claim 3: layers ----


def test_layers_sides(root):
    c = _claim(root, "layers")
    assert [(x.measure, x.where, x.a, x.b) for x in c.comparisons] == [
        ("expected_layer", "sentiment_vs_pos", "sentiment", "pos"),
        ("best_layer", "sentiment_vs_pos", "sentiment", "pos"),
        ("best_layer", "senses_vs_pos", "senses", "pos"),
    ]
    assert [(x.a_value, x.b_value) for x in c.comparisons] == [(1.5, 0.7), (2, 1), (2, 1)]
    assert c.figures["pos_best"] == "biLSTM layer 1" and c.figures["senses_best"] == "biLSTM layer 2"
    _set(root, "elmo", "eval_pos.json", 1.5, "expected_layer")  # swap the expected layers: a loss
    _set(root, "elmo", "eval_sentiment.json", 0.7, "expected_layer")
    c = _claim(root, "layers")
    assert c.verdict == "partly" and _outcomes(c) == ["loss", "win", "win"]


def test_a_tie_between_best_layers_is_no_win(root):
    _set(root, "elmo", "eval_pos.json", [0.7, 0.80, 0.88], "per_layer_score")  # POS's best is layer 2 too
    c = _claim(root, "layers")
    assert c.verdict == "partly" and _outcomes(c) == ["win", "tie", "tie"]
    _set(root, "elmo", "eval_pos.json", [0.7, 0.88, 0.8701], "per_layer_score")  # layers 1 and 2 tied for best
    c = _claim(root, "layers")
    assert _outcomes(c) == ["win", "tie", "tie"] and c.comparisons[1].b_range == (1, 2)
    assert c.figures["pos_best"] == ("biLSTM layer 1", "biLSTM layer 2")
    _set(root, "elmo", "eval_pos.json", [0.7, 0.88, 0.87], "per_layer_score")  # a full point apart: layer 1 is best
    assert _claim(root, "layers").verdict == "reproduced"
    _set(root, "elmo", "eval_sentiment.json", 0.7099, "expected_layer")  # 0.0099 of a layer above POS: a tie
    assert _outcomes(_claim(root, "layers")) == ["tie", "win", "win"]
    _set(root, "elmo", "eval_pos.json", [0.7, 0.80, 0.88], "per_layer_score")
    assert _claim(root, "layers").verdict == "not_reproduced"  # three ties, no win
    _set(root, "elmo", "eval_sentiment.json", [0.9, 0.7, 0.6], "per_layer_score")  # sentiment best at layer 0
    assert _outcomes(_claim(root, "layers")) == ["tie", "loss", "tie"]


def test_layers_missing_senses(root):
    (root / "elmo" / "eval_senses.json").unlink()
    c = _claim(root, "layers")
    assert c.verdict == "incomplete" and _outcomes(c) == ["win", "win", "missing"]
    assert c.missing_figures == [
        ("checkpoints/elmo/eval_senses.json#argmax (/sets/supplement/pair_ranking + /sets/frozen/pair_ranking)")
    ]


# ---- claim 4: input vs concat ----


def test_input_vs_concat(root):
    c = _claim(root, "input_vs_concat")
    assert [(x.where, x.a, x.b) for x in c.comparisons] == [
        (t, s, "none") for t in results.TASKS for s in ("input", "concat")
    ]
    x = c.comparisons[5]
    assert (x.a_value, x.b_value) == (0.80, 0.77)
    assert x.a_source.endswith("elmo/eval_sentiment.json#/concat_score")
    assert x.b_source.endswith("elmo/eval_sentiment.json#/baseline_score")
    _set(root, "elmo", "eval_ner.json", 0.7599, "concat_score")  # 0.0099 above no ELMo: a tie
    c = _claim(root, "input_vs_concat")
    assert c.verdict == "partly" and _outcomes(c)[3] == "tie"
    _set(root, "elmo", "eval_ner.json", 0.76, "concat_score")
    assert _claim(root, "input_vs_concat").verdict == "reproduced"
    for t in results.TASKS:
        _set(root, "elmo", f"eval_{t}.json", 0.95, "baseline_score")
    c = _claim(root, "input_vs_concat")
    assert c.verdict == "not_reproduced" and set(_outcomes(c)) == {"loss"}
    _set(root, "elmo", "eval_pos.json", None, "concat_score")
    c = _claim(root, "input_vs_concat")
    assert c.verdict == "incomplete" and c.missing_figures == ["checkpoints/elmo/eval_pos.json#/concat_score"]


# ---- claim 5: BERT vs ELMo ----


def test_bert_vs_elmo_compares_bert_with_elmo(root):
    c = _claim(root, "bert_vs_elmo")
    assert len(c.comparisons) == 1
    x = c.comparisons[0]
    assert (x.a, x.a_value, x.b, x.b_value, x.outcome) == ("bert", 0.83, "elmo", 0.81, "win")
    assert x.a_source == "checkpoints/bert/eval_sentiment.json#/score"
    assert x.b_source == "checkpoints/elmo/eval_sentiment.json#/score"
    assert c.figures["word2vec"] == 0.78  # for reference, no measure
    _set(root, "bert", "eval_sentiment.json", 0.80, "score")  # the lecturer's case: above word2vec, below ELMo
    c = _claim(root, "bert_vs_elmo")
    assert c.verdict == "not_reproduced" and _outcomes(c) == ["loss"]
    _set(root, "bert", "eval_sentiment.json", 0.81, "score")  # swap BERT's and ELMo's figures: the loss becomes a win
    _set(root, "elmo", "eval_sentiment.json", 0.80, "score")
    assert _claim(root, "bert_vs_elmo").verdict == "reproduced"


def test_bert_vs_elmo_at_the_margin_and_missing(root):
    _set(root, "bert", "eval_sentiment.json", 0.8199, "score")  # 0.0099 ahead: a tie, not reproduced
    c = _claim(root, "bert_vs_elmo")
    assert c.verdict == "not_reproduced" and _outcomes(c) == ["tie"] and c.figures["lead"] == pytest.approx(0.0099)
    _set(root, "bert", "eval_sentiment.json", 0.82, "score")
    assert _claim(root, "bert_vs_elmo").verdict == "reproduced"
    (root / "elmo" / "eval_sentiment.json").unlink()
    c = _claim(root, "bert_vs_elmo")
    assert c.verdict == "missing" and c.missing_figures == ["checkpoints/elmo/eval_sentiment.json#/score"]


# ---- claim 6: pre-training ----


def test_pretraining(root):
    c = _claim(root, "pretraining")
    assert [(x.measure, x.a, x.a_value, x.b, x.b_value) for x in c.comparisons] == [
        ("mlm_top1", "bert", 0.4, "most_frequent", 0.1),
        ("nsp_acc", "bert", 0.85, "chance", 0.5),
        ("mean_p_is_next", "true", 0.8, "random", 0.3),
    ]
    assert c.comparisons[0].b_source.startswith("checkpoints/bert/vocab.json#/") and c.comparisons[1].b_source == ""
    _set(root, "bert", "config.json", 0.5099, "summary", "valid", "nsp_acc")
    c = _claim(root, "pretraining")
    assert c.verdict == "partly" and _outcomes(c) == ["win", "tie", "win"]
    _set(root, "bert", "config.json", 0.51, "summary", "valid", "nsp_acc")
    assert _claim(root, "pretraining").verdict == "reproduced"
    _set(root, "bert", "config.json", 0.05, "summary", "valid", "mlm_top1")
    _set(root, "bert", "config.json", 0.5, "summary", "valid", "nsp_acc")
    _set(root, "bert", "eval_nsp.json", 0.8, "rows", "random", "mean_p")
    c = _claim(root, "pretraining")
    assert c.verdict == "not_reproduced" and _outcomes(c) == ["loss", "tie", "tie"]
    (root / "bert" / "vocab.json").unlink()
    c = _claim(root, "pretraining")
    assert c.verdict == "incomplete" and c.missing_figures == ["checkpoints/bert/vocab.json#/counts"]


# ---- claim 7: NSP topic ----


def test_nsp_topic(root):
    c = _claim(root, "nsp_topic")
    assert [(x.measure, x.a, x.a_value, x.b, x.b_value, x.margin) for x in c.comparisons] == [
        ("mean_p_is_next", "true", 0.8, "random", 0.3, 0.01),
        ("order_share", "swapped", 0.9, "threshold", 0.75, 0.0),
    ]
    _set(root, "bert", "eval_nsp.json", 0.75, "order_share")  # at the threshold: holds
    assert _claim(root, "nsp_topic").verdict == "reproduced"
    _set(root, "bert", "eval_nsp.json", 0.7499, "order_share")  # below it: a loss (a threshold has no tie zone)
    c = _claim(root, "nsp_topic")
    assert c.verdict == "partly" and _outcomes(c) == ["win", "loss"]
    _set(root, "bert", "eval_nsp.json", {"mean_p": 0.8}, "rows", "random")  # swap true and random: a loss
    _set(root, "bert", "eval_nsp.json", {"mean_p": 0.3}, "rows", "true")
    assert _claim(root, "nsp_topic").verdict == "not_reproduced"
    _set(root, "bert", "eval_nsp.json", None, "order_share")
    c = _claim(root, "nsp_topic")
    assert c.verdict == "incomplete" and c.missing_figures == ["checkpoints/bert/eval_nsp.json#/order_share"]


def test_files_of_the_wrong_shape_read_as_missing(root):
    _edit(root, "elmo", "eval_senses.json", lambda d: d.update(sets=["not", "a", "table"]))
    _set(root, "elmo", "eval_pos.json", ["x", "y"], "per_layer_score")
    (root / "bert" / "config.json").write_text('["a list"]', encoding="utf-8")
    found = {c.key: c for c in results.claims(root)}
    assert _outcomes(found["static_vs_contextual"])[:4] == ["missing"] * 4
    assert _outcomes(found["layers"]) == ["win", "missing", "missing"]
    assert _outcomes(found["pretraining"]) == ["missing", "missing", "win"]


# ---- outside models ----


def _outside(tmp_path, files):
    d = tmp_path / "outside" / "bert-base-chinese"
    d.mkdir(parents=True)
    for name, data in files.items():
        (d / name).write_text(json.dumps(data), encoding="utf-8")
    return d


def test_outside_models_sit_beside_ours_and_count_in_no_verdict(root, tmp_path):
    d = _outside(
        tmp_path,
        {
            "eval_sentiment.json": {"task": "sentiment", "score": 0.89},
            "eval_senses.json": _senses([0.5, 0.9], [0.5, 0.85], examples=[0.5, 0.95], names=["e", "l1"]),
            "eval_nsp.json": BASE[("bert", "eval_nsp.json")],
        },
    )
    _set(root, "bert", "eval_sentiment.json", 0.80, "score")  # our BERT loses to ELMo
    plain = results.claims(root)
    found = results.claims(root, extra_dirs={"bert-base-chinese": d})
    assert [c.verdict for c in found] == [c.verdict for c in plain]  # nothing outside changes a verdict
    by = {c.key: c for c in found}
    assert by["bert_vs_elmo"].verdict == "not_reproduced"
    [(name, x)] = by["bert_vs_elmo"].outside
    assert (name, x.a, x.a_value, x.b, x.b_value, x.outcome) == (
        "bert-base-chinese",
        "bert-base-chinese",
        0.89,
        "elmo",
        0.81,
        "win",
    )
    assert x.a_source == f"{d}/eval_sentiment.json#/score" and x.b_source.endswith("elmo/eval_sentiment.json#/score")
    senses = by["static_vs_contextual"].outside  # its own layer, chosen on its example sets
    assert [(y.where, y.measure, y.a_value, y.b_value) for _, y in senses] == [
        ("supplement", "pair_ranking", 0.9, 0.5),
        ("supplement", "accuracy", 0.9, 0.5),
        ("frozen", "pair_ranking", 0.85, 0.5),
        ("frozen", "accuracy", 0.85, 0.5),
    ]
    assert [(y.where, y.b) for _, y in by["elmo_vs_word2vec"].outside] == [("sentiment", "word2vec")]  # no POS/NER file
    for key in ("layers", "input_vs_concat", "pretraining", "nsp_topic"):  # our models' internals: no outside rows
        assert not by[key].outside
    assert results.outside_files({"bert-base-chinese": d, "x": tmp_path / "nowhere"}) == {
        "bert-base-chinese": ["eval_nsp.json", "eval_senses.json", "eval_sentiment.json"],
        "x": [],
    }


def test_outside_sentiment_file_also_meets_word2vec(root, tmp_path):
    d = _outside(tmp_path, {"eval_sentiment.json": {"task": "sentiment", "score": 0.785}})
    c = _claim(root, "elmo_vs_word2vec", extra_dirs={"big": d})
    [(name, x)] = c.outside  # against the same word2vec figure as ELMo's: 0.785 vs 0.78, a tie
    assert (name, x.where, x.a_value, x.b_value, x.outcome) == ("big", "sentiment", 0.785, 0.78, "tie")


def test_outside_names_and_folders(tmp_path):
    d = tmp_path / "ok"
    d.mkdir()
    with pytest.raises(ValueError, match="bert"):
        results.claims(tmp_path, extra_dirs={"bert": d})
    found, bad = results.parse_extra(f"big={d}; bert={d};nofolder={tmp_path / 'none'};noequals; ;=x")
    assert found == {"big": d} and bad == [f"bert={d}", f"nofolder={tmp_path / 'none'}", "noequals", "=x"]
    assert results.parse_extra(None) == ({}, [])

"""Edges of the Results page's claims (found by bench/mutation.sh's `results` scope): the held-out sense scores are
averaged before the one-point tie rule is applied, a layer exactly at the rule's slack is named tied only when the
verdict counts it tied, word2vec's sense figures are read at the index the page cites, the exact file#key each
best-layer and pre-training figure cites, the one-layer margin shown for best-layer measures, the most-frequent
baseline judged at the four decimals shown, the lead shown as the table's difference, BERT's config.json without
a summary, and outside models named after a kind the app does not ship."""

import json

import pytest
from test_results_rules import _claim, _edit, _set, root  # noqa: F401 (root: the fixture of the base files)

from ctxlib import kinds
from ctxlib.app import results_view
from ctxlib.results_files import parse_extra
from ctxlib.verdict import EPS, MARGIN


def _heldout(root, sup, frozen):  # noqa: F811
    _set(root, "elmo", "eval_senses.json", sup, "sets", "supplement", "pair_ranking")
    _set(root, "elmo", "eval_senses.json", frozen, "sets", "frozen", "pair_ranking")


def test_best_layer_for_senses_ties_on_the_mean_of_the_held_out_sets(root):  # noqa: F811
    # means 0.5, 0.7975, 0.8: layers 1 and 2 are a quarter point apart, tied (their sums are a full point apart)
    _heldout(root, [0.5, 0.795, 0.8], [0.5, 0.8, 0.8])
    c = _claim(root, "layers")
    assert c.figures["senses_best"] == ("biLSTM layer 1", "biLSTM layer 2")
    senses = [x for x in c.comparisons if x.where == "senses_vs_pos"][0]
    assert (senses.a_value, senses.a_range) == (2, (1, 2))
    _heldout(root, [0.5, 0.79, 0.8], [0.5, 0.79, 0.8])  # a full point apart on the mean: layer 2 alone
    assert _claim(root, "layers").figures["senses_best"] == "biLSTM layer 2"


def test_a_layer_exactly_at_the_rules_slack_is_named_tied_only_as_the_verdict_counts_it(root):  # noqa: F811
    edge = MARGIN - EPS  # one point less the float slack: not less than that below the top, so not tied
    scores = [edge, 0.0, edge]  # layers 0 and 2 tied on top; layer 1 sits exactly that far below
    _set(root, "elmo", "eval_pos.json", scores, "per_layer_score")
    c = _claim(root, "layers")
    tied = [j for j, s in enumerate(scores) if max(scores) - s < MARGIN - EPS]
    assert tied == [0, 2]
    assert c.figures["pos_best"] == ("char-CNN token layer", "biLSTM layer 2")


def test_word2vec_sense_figures_are_read_at_the_index_the_page_cites(root):  # noqa: F811
    # a word2vec file with two columns whose example sets are best at index 1: the page cites [0], so reads [0]
    w2v = {"pair_ranking": [0.5, 0.9], "accuracy": [0.5, 0.9]}
    sets = {"examples": dict(w2v), "supplement": {"pair_ranking": [0.55, 0.95], "accuracy": [0.45, 0.99]}}
    sets["frozen"] = {"pair_ranking": [0.52, 0.97], "accuracy": [0.42, 0.98]}
    _edit(root, "word2vec", "eval_senses.json", lambda d: d.update(sets=sets, layer_names=["a", "b"]))
    c = _claim(root, "static_vs_contextual")
    assert (c.figures["word2vec_supplement"], c.figures["word2vec_frozen"]) == (0.55, 0.52)
    shown = {(x.where, x.measure): (x.b_value, x.b_source) for x in c.comparisons if x.a == "elmo"}
    assert shown[("supplement", "accuracy")] == (
        0.45,
        "checkpoints/word2vec/eval_senses.json#/sets/supplement/accuracy[0]",
    )
    assert shown[("frozen", "pair_ranking")] == (
        0.52,
        "checkpoints/word2vec/eval_senses.json#/sets/frozen/pair_ranking[0]",
    )


def test_best_layer_measures_cite_their_files_and_show_a_one_layer_margin(root):  # noqa: F811
    best = [x for x in _claim(root, "layers").comparisons if x.measure == "best_layer"]
    assert [(x.where, x.a_source, x.b_source) for x in best] == [
        (
            "sentiment_vs_pos",
            "checkpoints/elmo/eval_sentiment.json#argmax /per_layer_score",
            "checkpoints/elmo/eval_pos.json#argmax /per_layer_score",
        ),
        (
            "senses_vs_pos",
            "checkpoints/elmo/eval_senses.json#argmax (/sets/supplement/pair_ranking + /sets/frozen/pair_ranking)",
            "checkpoints/elmo/eval_pos.json#argmax /per_layer_score",
        ),
    ]
    assert [f"≥ {x.margin:g}" for x in best] == ["≥ 1", "≥ 1"]  # the table's margin column


def test_pretraining_figures_cite_their_json_pointers(root):  # noqa: F811
    c = _claim(root, "pretraining")
    assert [(x.a_source, x.b_source) for x in c.comparisons] == [
        ("checkpoints/bert/config.json#/summary/valid/mlm_top1", "checkpoints/bert/vocab.json#/counts"),
        ("checkpoints/bert/config.json#/summary/valid/nsp_acc", ""),
        ("checkpoints/bert/eval_nsp.json#/rows/true/mean_p", "checkpoints/bert/eval_nsp.json#/rows/random/mean_p"),
    ]
    _set(root, "bert", "config.json", None, "summary")  # both missing: named by the same pointers
    assert _claim(root, "pretraining").missing_figures == [
        "checkpoints/bert/config.json#/summary/valid/mlm_top1",
        "checkpoints/bert/config.json#/summary/valid/nsp_acc",
    ]


def test_most_frequent_baseline_leaves_out_specials_and_is_judged_at_the_decimals_shown(root):  # noqa: F811
    vocab = {
        "specials": ["[PAD]", "[UNK]"],
        "counts": [90_000, 5, 2501] + [2500] * 8 + [2499],
    }  # 2501 / 25000 = 0.10004
    (root / "bert" / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    _set(root, "bert", "config.json", 0.11, "summary", "valid", "mlm_top1")
    mlm = _claim(root, "pretraining").comparisons[0]
    # shown 0.1100 against 0.1000, a lead of +0.0100 at a margin of 0.01: a win, as the table reads
    assert (f"{mlm.a_value:.4f}", f"{mlm.b_value:.4f}", mlm.outcome) == ("0.1100", "0.1000", "win")


@pytest.mark.parametrize("counts", [[0, 0], [0, 0, 0, 0], [7, 3]])
def test_most_frequent_baseline_without_counted_tokens_is_missing(root, counts):  # noqa: F811
    vocab = {"specials": ["[PAD]", "[UNK]"], "counts": counts}  # nothing counted past the specials
    (root / "bert" / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    c = _claim(root, "pretraining")
    assert c.comparisons[0].b_value is None and c.figures["unigram"] is None
    assert c.missing_figures == ["checkpoints/bert/vocab.json#/counts"]


def test_the_lead_in_the_why_line_is_the_tables_difference(root):  # noqa: F811
    _set(root, "bert", "eval_sentiment.json", 0.8300501, "score")  # a lead of 0.0200501 over ELMo's 0.81
    c = _claim(root, "bert_vs_elmo")
    x = c.comparisons[0]
    assert results_view.fmt("lead", c.figures["lead"]) == f"{x.lead[0]:+.4f}" == "+0.0201"


def test_tokens_are_shown_in_millions(root):  # noqa: F811
    _set(root, "bert", "config.json", {"steps": 10, "tokens_seen": 2_450_001}, "summary")
    assert results_view.fmt("tokens_m", _claim(root, "bert_vs_elmo").figures["tokens_m"]) == "2.5"


@pytest.mark.parametrize("summary", [None, [], "done"])
def test_a_bert_config_without_a_summary_table_leaves_its_figures_out(root, summary):  # noqa: F811
    _set(root, "bert", "config.json", summary, "summary")  # None: no summary at all
    c = _claim(root, "bert_vs_elmo")
    f = c.figures
    assert (f["layers"], f["hidden"]) == (4, 256)
    assert (f["steps"], f["tokens_m"], f["minutes"], f["device"]) == (None, None, None, None)
    assert c.verdict == "reproduced"


def test_an_outside_model_may_be_named_after_a_kind_the_app_does_not_ship(root, tmp_path):  # noqa: F811
    others = [k for k in kinds.names() if k not in kinds.names(shipped=True)]
    assert others, "every kind is shipped: nothing to check"
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "eval_sentiment.json").write_text(json.dumps({"score": 0.9}), encoding="utf-8")
    for name in others:
        assert parse_extra(f"{name}={folder}") == ({name: folder}, [])
        c = _claim(root, "bert_vs_elmo", extra_dirs={name: folder})
        assert [(n, x.a_value) for n, x in c.outside] == [(name, 0.9)]


def test_a_held_out_score_that_is_no_number_leaves_the_senses_best_layer_missing(root):  # noqa: F811
    _heldout(root, [0.5, "0.6", 0.8], [0.5, 0.6, 0.75])
    c = _claim(root, "layers")
    senses = [x for x in c.comparisons if x.where == "senses_vs_pos"][0]
    assert c.figures["senses_best"] is None and senses.outcome == "missing"
    assert c.verdict == "incomplete"

"""The Results page's claims from a complete set of eval files (found by bench/mutation.sh's `results` scope): every
placeholder of every claim's sentences gets its figure, every measure, place and side has its text in both
languages, the derived figures (a standard error, millions of characters, minutes, deltas, the most-frequent
baseline) are computed as the page says, and the outside models' folders are parsed and listed."""

import json
import string

import pytest
from test_results_rules import _claim, _set, root  # noqa: F401 (root: the fixture of the base files)

from ctxlib import results
from ctxlib.app import i18n
from ctxlib.results_files import outside_files, parse_extra


@pytest.fixture
def full(root):  # noqa: F811
    """The base files plus what only some checkpoints write: BERT's training summary, its MLM top-5 and examples,
    the fine-tuned and frozen-features scores of BERT's sentiment eval."""
    _set(
        root,
        "bert",
        "config.json",
        {
            "steps": 100,
            "tokens_seen": 12_345_678,
            "wall_s": 5400,
            "device": "cuda",
            "valid": {"mlm_top1": 0.4, "mlm_top5": 0.6, "nsp_acc": 0.85, "n_examples": 512},
        },
        "summary",
    )
    _set(root, "bert", "eval_sentiment.json", 0.79, "input_score")
    return root


def _placeholders(text: str) -> set[str]:
    return {f for _, f, _, _ in string.Formatter().parse(text) if f}


def test_every_placeholder_of_every_claim_gets_its_figure(full):
    for c in results.claims(full):
        assert not c.missing, (c.key, c.missing)
        for lang in ("en", "zh"):
            cat = i18n.catalogue(lang)
            for part in ("figure", "why", "why_reproduced", "why_not_reproduced"):
                template = cat.get(f"results.claim.{c.key}.{part}")
                if template is None:
                    continue
                for name in _placeholders(template):
                    assert c.figures.get(name) is not None, (lang, c.key, part, name)


def test_every_measure_place_and_side_has_its_text(full):
    for c in results.claims(full):
        for x in c.comparisons:
            for msg_id in (
                f"results.measure.{x.measure}",
                f"results.where.{x.where}",
                f"results.side.{x.a}",
                f"results.side.{x.b}",
            ):
                assert msg_id in i18n.catalogue("en") and msg_id in i18n.catalogue("zh"), (c.key, msg_id)


def test_derived_figures(full):
    by = {c.key: c for c in results.claims(full)}
    e = by["elmo_vs_word2vec"].figures
    assert e["sentiment_se"] == round((0.81 * 0.19 / 1000) ** 0.5, 4) == 0.0124
    assert (e["gain_min"], e["gain_max"]) == (0.03, 0.05)  # sentiment 0.81-0.78, POS 0.90-0.85
    b = by["bert_vs_elmo"].figures
    assert (b["tokens_m"], b["minutes"], b["device"], b["steps"]) == (12.3, 90, "CUDA", 100)
    assert (b["layers"], b["hidden"], b["n_train"], b["lead"]) == (4, 256, 3000, 0.02)
    assert (b["bert"], b["elmo"], b["word2vec"], b["bert_finetuned"], b["bert_features"]) == (
        0.83,
        0.81,
        0.78,
        0.83,
        0.79,
    )
    p = by["pretraining"].figures
    assert (p["mlm_top1"], p["mlm_top5"], p["unigram"], p["nsp_acc"], p["n_examples"]) == (0.4, 0.6, 0.1, 0.85, 512)
    assert (p["p_true"], p["p_random"]) == (0.8, 0.3)
    n = by["nsp_topic"].figures
    assert (n["n"], n["share"], n["threshold"], n["p_true"], n["p_swapped"], n["p_random"]) == (
        100,
        0.9,
        0.75,
        0.8,
        0.75,
        0.3,
    )
    i = by["input_vs_concat"].figures
    assert (i["pos_delta"], i["ner_delta"], i["sentiment_delta"]) == (-0.01, -0.01, -0.01)
    assert (i["pos_input"], i["pos_concat"], i["pos_none"]) == (0.90, 0.89, 0.80)
    s = by["static_vs_contextual"].figures
    assert (s["elmo_layer"], s["bert_supplement"], s["word2vec_frozen"]) == ("biLSTM layer 2", 0.8, 0.5)


@pytest.mark.parametrize(
    "tuned,score_from,want",
    [(None, "finetune", 0.83), (None, None, 0.83), (None, "features", None), (0.77, "features", 0.77)],
)
def test_bert_fine_tuned_figure_is_the_fine_tuned_way(full, tuned, score_from, want):
    _set(full, "bert", "eval_sentiment.json", score_from, "score_from")
    if tuned is not None:
        _set(full, "bert", "eval_sentiment.json", tuned, "finetune_score")
    assert _claim(full, "bert_vs_elmo").figures["bert_finetuned"] == want


def test_a_summary_without_tokens_or_time_leaves_those_figures_out(full):
    _set(full, "bert", "config.json", {"steps": 100}, "summary")
    b = _claim(full, "bert_vs_elmo").figures
    assert (b["tokens_m"], b["minutes"], b["device"], b["steps"]) == (None, None, None, 100)


def test_standard_error_needs_the_number_of_test_items(full):
    _set(full, "elmo", "eval_sentiment.json", None, "n_test")
    assert _claim(full, "elmo_vs_word2vec").figures.get("sentiment_se") is None


def test_a_sense_tuned_model_is_noted_with_its_tune(full):
    cfg = {"kind": "bert", "summary": {"sense_tune": {"config": {"steps": 40}, "words": 12}}}
    (full / "bert" / "config.json").write_text(
        json.dumps({**json.loads((full / "bert" / "config.json").read_text()), **cfg}), encoding="utf-8"
    )
    c = _claim(full, "static_vs_contextual")
    assert c.notes == [("results.sense_tuned", {"model": "BERT", "steps": 40, "words": 12})]
    cfg = {"kind": "gpt", "config": {}, "summary": {"sense_tune": {}}}  # a record without its figures
    (full / "gpt" / "config.json").write_text(json.dumps(cfg), encoding="utf-8")
    assert ("results.sense_tuned", {"model": "GPT", "steps": "?", "words": "?"}) in _claim(
        full, "static_vs_contextual"
    ).notes


def test_layers_name_the_best_layer_of_each_task(full):
    f = _claim(full, "layers").figures
    assert (f["pos_best"], f["sentiment_best"], f["senses_best"]) == (
        "biLSTM layer 1",
        "biLSTM layer 2",
        "biLSTM layer 2",
    )
    assert (f["pos_expected"], f["sentiment_expected"]) == (0.7, 1.5)


def test_parse_extra_keeps_usable_entries_and_returns_the_others_as_given(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    text = f" mine = {tmp_path / 'a'} ; ;noequals;=x;elmo={tmp_path / 'b'};mine={tmp_path / 'b'};gone={tmp_path / 'z'}"
    found, bad = parse_extra(text)
    assert found == {"mine": tmp_path / "a"}
    assert bad == ["noequals", "=x", f"elmo={tmp_path / 'b'}", f"mine={tmp_path / 'b'}", f"gone={tmp_path / 'z'}"]
    assert parse_extra(f"x={tmp_path / 'a'};y=") == ({"x": tmp_path / "a"}, ["y="])
    assert parse_extra(None) == ({}, [])


def test_outside_files_lists_the_eval_files_of_each_folder(tmp_path):
    (tmp_path / "a").mkdir()
    for name in ("eval_senses.json", "eval_pos.json", "config.json"):
        (tmp_path / "a" / name).write_text("{}")
    assert outside_files({"a": tmp_path / "a", "b": tmp_path / "none"}) == {
        "a": ["eval_pos.json", "eval_senses.json"],
        "b": [],
    }


def test_each_missing_file_is_named_once_with_the_command_that_writes_it(tmp_path):
    """No files at all: a claim lists each file it needs once, beside the exact command that writes it."""
    for c in results.claims(tmp_path):
        files = [f for f, _ in c.missing]
        assert len(files) == len(set(files)), (c.key, c.missing)
        for rel, command in c.missing:
            _, model, name = rel.split("/")
            if name.startswith("eval_"):
                assert command == f"python -m ctxlib eval {model} --task {name[5:-5]}", (c.key, rel, command)
            else:
                assert command == f"python -m ctxlib train {model}", (c.key, rel, command)
        for x in c.comparisons:
            for src in (x.a_source, x.b_source):
                assert src == "" or src.startswith(f"{tmp_path.name}/") and ".json#" in src, (c.key, src)


def _pointer(data, src):
    """The value at a plain JSON pointer source (file#/a/b), or None when the source is a derived one."""
    ptr = src.split("#", 1)[1]
    if not ptr.startswith("/") or " " in ptr or "[" in ptr:
        return None
    for k in ptr[1:].split("/"):
        data = data[k]
    return data


def test_each_cited_source_holds_the_figure_shown(full):
    checked = 0
    for c in results.claims(full):
        for x in c.comparisons:
            for src, value in ((x.a_source, x.a_value), (x.b_source, x.b_value)):
                if not src:
                    continue
                _, model, name = src.split("#")[0].split("/")
                got = _pointer(json.loads((full / model / name).read_text()), src)
                if got is not None and not isinstance(got, list):  # a list: a figure derived from it
                    assert got == value, (c.key, src)
                    checked += 1
    assert checked >= 20


def test_best_layer_comparisons_carry_their_tied_ranges(full):
    _set(full, "elmo", "eval_sentiment.json", [0.6, 0.745, 0.75], "per_layer_score")  # layers 1 and 2 tied, 2 on top
    _set(full, "elmo", "eval_pos.json", [0.88, 0.8701, 0.7], "per_layer_score")  # layers 0 and 1 tied, 0 on top
    best = _claim(full, "layers").comparisons[1]
    assert (best.a_value, best.a_range, best.b_value, best.b_range) == (2, (1, 2), 0, (0, 1))


def test_tied_best_layers_are_named_and_a_full_point_between_them_is_not(full):
    _set(full, "elmo", "eval_pos.json", [0.88, 0.87, 0.8799], "per_layer_score")
    assert _claim(full, "layers").figures["pos_best"] == ("char-CNN token layer", "biLSTM layer 2")
    _set(full, "elmo", "eval_pos.json", ["char-CNN token layer", "biLSTM layer 1"], "layer_names")  # one name short
    _set(full, "elmo", "eval_pos.json", [0.7, 0.88, 0.8799], "per_layer_score")
    assert _claim(full, "layers").figures["pos_best"] == ("biLSTM layer 1", "2")
    _set(full, "elmo", "eval_pos.json", [0.7, 0.8, 0.88], "per_layer_score")  # the best layer has no name
    assert _claim(full, "layers").figures["pos_best"] is None


def test_sense_figures_are_pair_ranking_rounded_and_numbers_only(full):
    for where in ("supplement", "frozen"):
        _set(full, "elmo", "eval_senses.json", [0.1, 0.2, 0.3], "sets", where, "accuracy")
    _set(full, "elmo", "eval_senses.json", [0.5, 0.6, 0.812345], "sets", "supplement", "pair_ranking")
    _set(full, "bert", "eval_senses.json", [0.5, 0.6, "0.8"], "sets", "supplement", "pair_ranking")
    f = _claim(full, "static_vs_contextual").figures
    assert (f["elmo_supplement"], f["elmo_frozen"], f["bert_supplement"]) == (0.8123, 0.75, None)


def test_a_boolean_is_no_number(full):
    _set(full, "elmo", "eval_sentiment.json", True, "n_test")
    assert _claim(full, "elmo_vs_word2vec").figures.get("sentiment_se") is None


def test_a_claim_lists_each_file_it_read_once(full):
    c = _claim(full, "elmo_vs_word2vec")
    assert c.files == [f"checkpoints/elmo/eval_{t}.json" for t in ("pos", "ner", "sentiment")]


def test_elmo_sense_tune_note_names_elmo(full):
    cfg = {"kind": "elmo", "config": {}, "summary": {"sense_tune": {"config": {"steps": 7}, "words": 3}}}
    (full / "elmo" / "config.json").write_text(json.dumps(cfg), encoding="utf-8")
    assert _claim(full, "static_vs_contextual").notes == [
        ("results.sense_tuned", {"model": "ELMo", "steps": 7, "words": 3})
    ]


def test_outside_models_named_like_shipped_ones_are_refused_by_name(full, tmp_path):
    with pytest.raises(ValueError, match="outside model named like a shipped one: bert, elmo$"):
        results.claims(full, {"elmo": tmp_path, "bert": tmp_path, "mine": tmp_path})


def test_parse_extra_splits_at_the_first_equals_and_needs_a_name(tmp_path):
    d = tmp_path / "a=b"
    d.mkdir()
    assert parse_extra(f"mine={d}") == ({"mine": d}, [])
    assert parse_extra(f"={d}") == ({}, [f"={d}"])

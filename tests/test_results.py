"""ctxlib.results: the verdict rule, missing and corrupt files, and figures read from the files as they are."""

import json
import shutil

import pytest

from ctxlib import checkpoint, results
from ctxlib.results import Comparison, verdict


def _c(a, b, margin=results.MARGIN):
    return Comparison("task_score", "pos", "elmo", a, "word2vec", b, margin)


def test_verdict_rule():
    assert verdict([]) == "missing"
    assert verdict([_c(None, 0.8)]) == "missing" and verdict([_c(0.9, 0.8), _c(0.7, None)]) == "incomplete"
    assert verdict([_c(0.9, 0.8), _c(0.7, 0.6)]) == "reproduced"
    assert verdict([_c(0.9, 0.8), _c(0.6, 0.7)]) == "partly"
    assert verdict([_c(0.8, 0.9), _c(0.6, 0.7)]) == "not_reproduced"
    assert _c(0.81, 0.80).holds and not _c(0.809, 0.80).holds  # a lead of one point holds, less does not
    assert Comparison("best_layer", "x", "a", 2, "b", 1, margin=1).holds
    assert not Comparison("best_layer", "x", "a", 1, "b", 1, margin=1).holds


def test_missing_files_name_their_commands(tmp_path):
    found = results.claims(tmp_path)
    assert [c.key for c in found] == list(results.CLAIMS)
    for c in found:  # every measure listed, none measured
        assert c.verdict == "missing" and c.comparisons and not c.measured and not c.files and c.missing
        assert all(x.outcome == "missing" for x in c.comparisons) and c.missing_figures
        for file, command in c.missing:
            assert file.startswith(tmp_path.name + "/") and command.startswith("python -m ctxlib ")
    by_key = {c.key: c for c in found}
    assert (f"{tmp_path.name}/bert/eval_nsp.json", "python -m ctxlib eval bert --task nsp") in by_key[
        "nsp_topic"
    ].missing
    assert (f"{tmp_path.name}/elmo/eval_senses.json", "python -m ctxlib eval elmo --task senses") in by_key[
        "static_vs_contextual"
    ].missing


def _elmo_eval(task, score, w2v, base, concat, expected, per_layer):
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
        "layer_names": ["char-CNN token layer", "biLSTM layer 1", "biLSTM layer 2"],
    }


def test_claims_from_written_files_and_a_corrupt_one(tmp_path):
    (tmp_path / "elmo").mkdir()
    for task, vals in {
        "pos": (0.90, 0.85, 0.80, 0.91, 0.6, [0.7, 0.9, 0.8]),
        "ner": (0.88, 0.86, 0.75, 0.87, 1.1, [0.5, 0.8, 0.79]),
        "sentiment": (0.80, 0.795, 0.77, 0.79, 1.4, [0.6, 0.7, 0.75]),
    }.items():
        (tmp_path / "elmo" / f"eval_{task}.json").write_text(json.dumps(_elmo_eval(task, *vals)), encoding="utf-8")
    found = {c.key: c for c in results.claims(tmp_path)}
    c = found["elmo_vs_word2vec"]
    assert c.verdict == "partly" and c.held == 2  # sentiment leads by 0.005 only: a tie
    assert [x.outcome for x in c.comparisons] == ["win", "win", "tie"]
    assert c.figures["pos_elmo"] == 0.90 and c.figures["sentiment_word2vec"] == 0.795
    assert c.figures["gain_min"] == pytest.approx(0.005) and c.figures["gain_max"] == pytest.approx(0.05)
    assert found["input_vs_concat"].verdict == "reproduced" and found["input_vs_concat"].figures["ner_delta"] == -0.01
    lay = found["layers"]  # expected layer and best layer: sentiment above POS; senses file missing
    assert lay.verdict == "incomplete" and [x.outcome for x in lay.comparisons] == ["win", "win", "missing"]
    assert lay.missing_figures == [
        (f"{tmp_path.name}/elmo/eval_senses.json#argmax (/sets/supplement/pair_ranking + /sets/frozen/pair_ranking)")
    ]
    assert lay.figures["pos_best"] == "biLSTM layer 1" and lay.figures["sentiment_best"] == "biLSTM layer 2"
    assert (f"{tmp_path.name}/elmo/eval_senses.json", "python -m ctxlib eval elmo --task senses") in lay.missing
    (tmp_path / "elmo" / "eval_ner.json").write_text("{not json", encoding="utf-8")
    c = {c.key: c for c in results.claims(tmp_path)}["elmo_vs_word2vec"]
    assert len(c.measured) == 2 and any(f.endswith("elmo/eval_ner.json") for f, _ in c.missing)
    assert c.verdict == "incomplete" and [x.where for x in c.comparisons if not x.measured] == ["ner"]


def _read(model, name):
    return json.loads((checkpoint.CHECKPOINT_DIR / model / name).read_text(encoding="utf-8"))


def test_shipped_figures_equal_the_files():
    need = [
        ("bert", "eval_sentiment.json"),
        ("elmo", "eval_sentiment.json"),
        ("bert", "eval_nsp.json"),
        ("bert", "config.json"),
    ]
    if not all((checkpoint.CHECKPOINT_DIR / m / n).is_file() for m, n in need):
        pytest.skip("shipped eval files missing")
    found = {c.key: c for c in results.claims()}
    bert, elmo, nsp = (
        _read("bert", "eval_sentiment.json"),
        _read("elmo", "eval_sentiment.json"),
        _read("bert", "eval_nsp.json"),
    )
    c = found["bert_vs_elmo"]  # BERT against ELMo only; word2vec is a reference figure, not a measure
    assert [(x.a, x.a_value, x.b, x.b_value) for x in c.comparisons] == [("bert", bert["score"], "elmo", elmo["score"])]
    assert c.figures["word2vec"] == elmo["word2vec_score"]
    assert c.verdict == verdict(c.comparisons)
    t = found["nsp_topic"]
    assert t.figures["p_swapped"] == nsp["rows"]["swapped"]["mean_p"] and t.figures["share"] == nsp["order_share"]
    valid = _read("bert", "config.json")["summary"]["valid"]
    assert found["pretraining"].figures["nsp_acc"] == valid["nsp_acc"]


def _copy_shipped_json(dst, needs: str):
    """The shipped BERT's and ELMo's JSON files (config, evals) copied into dst/<model>; skip without `needs`."""
    src = checkpoint.CHECKPOINT_DIR
    if not (src / "bert" / needs).is_file():
        pytest.skip("shipped eval files missing")
    for m in ("bert", "elmo"):
        (dst / m).mkdir()
        for f in (src / m).glob("*.json"):
            shutil.copy(f, dst / m / f.name)


def test_a_copied_folder_with_one_file_removed(tmp_path):
    _copy_shipped_json(tmp_path, "eval_nsp.json")
    (tmp_path / "bert" / "eval_nsp.json").unlink()
    found = {c.key: c for c in results.claims(tmp_path)}
    assert found["nsp_topic"].verdict == "missing"
    pre = found["pretraining"]  # MLM and NSP accuracy measured; true vs random P(IsNext) is not
    assert pre.verdict == "incomplete" and [x.measure for x in pre.measured] == ["mlm_top1", "nsp_acc"]


def test_a_sense_tuned_model_is_noted_beside_its_sense_figures(tmp_path):
    _copy_shipped_json(tmp_path, "eval_senses.json")
    for m in ("bert", "elmo"):  # as pre-trained
        c = json.loads((tmp_path / m / "config.json").read_text(encoding="utf-8"))
        c["summary"].pop("sense_tune", None)
        (tmp_path / m / "config.json").write_text(json.dumps(c), encoding="utf-8")
    cfg = json.loads((tmp_path / "bert" / "config.json").read_text(encoding="utf-8"))
    assert {c.key: c for c in results.claims(tmp_path)}["static_vs_contextual"].notes == []
    cfg["summary"]["sense_tune"] = {"config": {"steps": 1500}, "words": 49}
    (tmp_path / "bert" / "config.json").write_text(json.dumps(cfg), encoding="utf-8")
    notes = {c.key: c for c in results.claims(tmp_path)}["static_vs_contextual"].notes
    assert notes == [("results.sense_tuned", {"model": "BERT", "steps": 1500, "words": 49})]
    (tmp_path / "bert" / "config.json").write_text("{broken", encoding="utf-8")  # unreadable: no note, no error
    assert {c.key: c for c in results.claims(tmp_path)}["static_vs_contextual"].notes == []

"""bench/compare_evals.py: paired bootstrap intervals of held-out differences between two checkpoints' eval files,
and the cloze eval's per-item ranks it reads."""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from ctxlib.evaluation import heldout

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("compare_evals", ROOT / "bench" / "compare_evals.py")
ce = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ce)


def _senses(per_word: dict) -> dict:
    return {
        "sets": {"frozen": {"per_word": {w: {"n": 14, "accuracy": v, "pair_ranking": v} for w, v in per_word.items()}}}
    }


def _write(d: Path, senses=None, ranks=None):
    d.mkdir()
    if senses is not None:
        (d / "eval_senses.json").write_text(json.dumps(senses))
    if ranks is not None:
        (d / "eval_cloze.json").write_text(json.dumps({"ranks": ranks}))
    return d


def test_identical_files_differ_by_nothing(tmp_path):
    s = _senses({"a": [0.5, 0.7], "b": [0.5, 0.9], "c": [0.5, 0.6]})
    a, b = _write(tmp_path / "a", s, [1, 0, 2, 5, 1]), _write(tmp_path / "b", s, [1, 0, 2, 5, 1])
    rows = ce.compare(a, b, boot=200)
    assert [r["measure"] for r in rows] == ["LOO accuracy", "pair ranking", "top-1", "top-5"]
    assert all(r["diff"] == 0 and r["ci"] == [0, 0] for r in rows)
    assert rows[1]["old"] == pytest.approx(np.mean([0.7, 0.9, 0.6]), abs=1e-4)  # the best layer's mean over words
    assert rows[2]["old"] == 0.4 and rows[3]["old"] == 0.8  # ranks 1 count for top-1; ranks 1-5 for top-5


def test_a_uniform_gain_is_better_and_a_mixed_change_is_not_measurable(tmp_path, capsys):
    old = _senses({w: [0.5, 0.6 + 0.01 * i] for i, w in enumerate("abcdefghij")})
    up = _senses({w: [0.5, 0.7 + 0.01 * i] for i, w in enumerate("abcdefghij")})  # every word +0.1
    mixed = _senses({w: [0.5, 0.6 + 0.01 * i + (0.1 if i % 2 else -0.1)] for i, w in enumerate("abcdefghij")})
    a, b, c = _write(tmp_path / "a", old), _write(tmp_path / "b", up), _write(tmp_path / "c", mixed)
    [_, pr] = ce.compare(a, b, boot=500)
    assert pr["diff"] == pytest.approx(0.1) and pr["ci"][0] > 0.09
    [_, pr] = ce.compare(a, c, boot=500)
    assert pr["ci"][0] < 0 < pr["ci"][1]
    assert ce.main([str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "better" in out and "frozen" in out


def test_files_that_cannot_be_paired_exit_2(tmp_path, capsys):
    a = _write(tmp_path / "a", _senses({"a": [0.5, 0.7]}), [1, 2])
    b = _write(tmp_path / "b", _senses({"z": [0.5, 0.7]}))
    assert ce.main([str(a), str(b)]) == 2
    assert "different words" in capsys.readouterr().err
    c = _write(tmp_path / "c", None, None)
    assert ce.main([str(a), str(c)]) == 2
    d = _write(tmp_path / "d", None, [1])
    e = tmp_path / "e"
    e.mkdir()
    (e / "eval_cloze.json").write_text(json.dumps({"all": {"top1": 0.5}}))  # written before per-item ranks
    assert ce.main([str(d), str(e)]) == 2
    assert "rerun" in capsys.readouterr().err


def test_cloze_eval_records_each_items_rank(monkeypatch):
    items = [
        ("今天天气很[MASK]。", "好", "daily"),
        ("北[MASK]是首都。", "京", "news"),
        ("房间很干[MASK]。", "净", "review"),
    ]
    monkeypatch.setattr(heldout, "cloze_items", lambda: items)

    class Fake:
        def fill_mask(self, text, topk=5):
            cands = {"今": "好坏冷热晴", "北": "方京部边海", "房": "燥脆湿冷凉"}[text[0]]
            return [{"candidates": [(c, 0.1) for c in cands]}]

    r = heldout.cloze(Fake())
    assert r["ranks"] == [1, 2, 0]
    assert r["all"] == {"top1": round(1 / 3, 4), "top5": round(2 / 3, 4), "n": 3}

"""bench/dose_response.py: the timeline's snapshots as a dose-response table and the log-linear fit of pair ranking
on tokens seen."""

import importlib.util
import json
import math
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("dose_response", ROOT / "bench" / "dose_response.py")
dr = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(dr)


def _timeline(points):
    """points: (tokens, pair ranking per layer, accuracy per layer)."""
    return {
        "kind": "bert",
        "snapshots": [
            {"step": i, "tokens": t, "valid_loss": 5.0, "pair_ranking_mean": pr, "sense_accuracy_mean": acc}
            for i, (t, pr, acc) in enumerate(points)
        ],
    }


def test_rows_take_each_snapshots_best_layer():
    r = dr.rows(_timeline([(10, [0.5, 0.7, 0.6], [0.4, 0.3, 0.9])]))
    assert r == [
        {"step": 0, "tokens": 10, "valid_loss": 5.0, "loo_best": 0.9, "loo_layer": 2, "pr_best": 0.7, "pr_layer": 1}
    ]


def test_fit_recovers_a_known_line_and_its_crossing():
    # pr = 0.1 + 0.03 * log2(tokens): reaches 0.85 at 2 ** 25 tokens
    pts = [{"tokens": 2**k, "pr_best": 0.1 + 0.03 * k} for k in (20, 21, 22, 23)]
    f = dr.fit(pts, from_tokens=0)
    assert f["per_doubling"] == pytest.approx(0.03) and f["points"] == 4
    assert math.log2(f["tokens_for_0.85"]) == pytest.approx(25)


def test_fit_needs_three_points_past_the_threshold_and_a_rising_line_to_extrapolate():
    pts = [{"tokens": 2**k, "pr_best": 0.6} for k in (20, 21, 22)]
    assert dr.fit(pts[:2], from_tokens=0) is None
    assert dr.fit(pts, from_tokens=2**21) is None  # only two from there
    assert dr.fit(pts, from_tokens=0)["tokens_for_0.85"] is None  # flat: never


def test_cli_prints_the_table_and_exits_2_on_a_folder_without_timeline(tmp_path, capsys):
    d = tmp_path / "m"
    d.mkdir()
    (d / "timeline.json").write_text(
        json.dumps(_timeline([(2**k, [0.5, 0.1 + 0.03 * k], [0.5, 0.6]) for k in (22, 23, 24)]))
    )
    assert dr.main([str(d)]) == 0
    out = capsys.readouterr().out
    assert "+0.030 pair ranking per doubling" in out and "0.85: ~34 M tokens" in out
    assert dr.main([str(tmp_path / "missing")]) == 2
    assert "cannot read" in capsys.readouterr().err
    (d / "timeline.json").write_bytes(b"\xff\x00binary")
    assert dr.main([str(d)]) == 2
    (d / "timeline.json").write_text(json.dumps({"snapshots": [1, 2]}))  # valid JSON, not a timeline
    assert dr.main([str(d)]) == 2

"""bench/cloze_by_frequency.py: cloze hits grouped by how often the answer's word occurs in the training text."""

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("cloze_by_frequency", ROOT / "bench" / "cloze_by_frequency.py")
cf = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cf)


def test_seen_takes_the_larger_count_of_the_two_neighbours():
    text = "我很高兴。高兴！兴奋兴奋兴奋"
    assert cf.seen(text, "我今天很高[MASK]。", "兴") == 2  # 高兴 twice; the right neighbour is punctuation
    assert cf.seen(text, "[MASK]奋极了", "兴") == 3  # no left neighbour; 兴奋 three times
    assert cf.seen(text, "。[MASK]。", "兴") == 0  # punctuation on both sides counts nothing
    assert cf.seen(text, "他很[MASK]心", "开") == 0


def test_buckets_are_decades_with_top1_and_top5_shares():
    rows = cf.buckets([0, 9, 10, 99, 150, 5000], [1, 0, 2, 1, 0, 1])
    assert [r["seen"] for r in rows] == ["0-9", "10-99", "100-999", "1,000+"]
    assert rows[0] == {"seen": "0-9", "n": 2, "top1": 0.5, "top5": 0.5}
    assert rows[1] == {"seen": "10-99", "n": 2, "top1": 0.5, "top5": 1.0}
    assert rows[2] == {"seen": "100-999", "n": 1, "top1": 0.0, "top5": 0.0}
    assert rows[3]["n"] == 1 and rows[3]["top1"] == 1.0


def test_an_empty_bucket_has_no_share_and_lengths_must_match():
    assert cf.buckets([5], [1])[2] == {"seen": "100-999", "n": 0, "top1": None, "top5": None}
    with pytest.raises(ValueError):
        cf.buckets([1, 2], [1])


@pytest.mark.parametrize("content", ['{"ranks": [1, 2]}', '{"ranks": "x"}', "not json", None])
def test_a_missing_or_foreign_eval_file_exits_2_with_one_line(tmp_path, capsys, content):
    if content is not None:
        (tmp_path / "eval_cloze.json").write_text(content, encoding="utf-8")
    assert cf.main([str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("cloze_by_frequency: cannot use") and "\n" not in err and "--task cloze" in err


def test_the_shipped_eval_file_matches_the_cloze_set():
    ranks = json.loads((ROOT / "checkpoints/bert/eval_cloze.json").read_text(encoding="utf-8"))["ranks"]
    from ctxlib.evaluation.heldout import cloze_items

    assert len(ranks) == len(cloze_items())

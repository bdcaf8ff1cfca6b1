"""Word-centering (heldout.type_mean, sense_scores(center=True)) and bench/word_centering.py."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from ctxlib import corpus
from ctxlib.analysis import loo_centroid_accuracy, pair_ranking
from ctxlib.evaluation import heldout

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("word_centering", ROOT / "bench" / "word_centering.py")
wc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(wc)


class Recorder:
    """An encoder that records the texts it is asked for and returns one vector per text: (len(text), 1)."""

    def __init__(self):
        self.texts = []

    def word_vectors(self, texts, word):
        self.texts += list(texts)
        return np.array([[[len(t), 1.0]] for t in texts], np.float32)


def test_type_mean_windows_each_occurrence_so_it_is_the_first_match(monkeypatch):
    occ = [
        corpus.Occurrence("打算先打球", 3, 4, None, "pd", "train"),  # 打 inside 打算 comes first
        corpus.Occurrence("我们" * 30 + "打字", 60, 61, None, "pd", "train"),  # far into a long sentence
        corpus.Occurrence("打打", 1, 2, None, "pd", "train"),
    ]  # the window cannot start before it
    monkeypatch.setattr(corpus, "occurrences", lambda *a, **k: (occ, len(occ)))
    enc = Recorder()
    mean, n = heldout.type_mean(enc, "打", window=5)
    assert enc.texts == ["算先打球", "们我们我们打字", "打"]
    assert n == 3 and mean.shape == (1, 2) and mean[0, 0] == pytest.approx((4 + 7 + 1) / 3)


def test_type_mean_of_a_word_that_never_occurs_is_none(monkeypatch):
    monkeypatch.setattr(corpus, "occurrences", lambda *a, **k: ([], 0))
    assert heldout.type_mean(Recorder(), "龘") == (None, 0)


def test_centered_scores_are_the_raw_vectors_minus_the_type_mean(tiny_bert):
    """On a real (tiny, untrained) BERT: the centered figures are the measures of V - type_mean, word by word."""
    r = heldout.sense_scores(tiny_bert, "examples", center=True, cap=4)
    assert r["centered"] is True
    word, items = next(iter(heldout.sense_sets("examples").items()))
    labels = [s for _, s in items]
    mean, n = heldout.type_mean(tiny_bert, word, cap=4)
    assert n == r["per_word"][word]["type_occurrences"] > 0
    V = tiny_bert.word_vectors([t for t, _ in items], word).astype(np.float64) - mean[None]
    got = r["per_word"][word]
    for j in range(V.shape[1]):
        assert got["pair_ranking"][j] == pytest.approx(pair_ranking(V[:, j], labels), abs=1e-4)
        assert got["accuracy"][j] == pytest.approx(loo_centroid_accuracy(V[:, j], labels), abs=1e-4)
    assert "centered" not in heldout.sense_scores(tiny_bert, "frozen")


def test_cli_bad_arguments_and_checkpoints_exit_2(tmp_path, capsys):
    assert wc.main(["--sets", "nope"]) == 2
    assert wc.main(["--cap", "0"]) == 2
    bad = tmp_path / "ck"
    bad.mkdir()
    (bad / "config.json").write_bytes(b"\x00\xff not json")
    assert wc.main([str(bad), "--sets", "frozen"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and all(ln.startswith("word_centering:") for ln in err)


_spec2 = importlib.util.spec_from_file_location("sense_probe", ROOT / "bench" / "sense_probe.py")
sp = importlib.util.module_from_spec(_spec2)
_spec2.loader.exec_module(sp)


def test_sense_probe_on_a_tiny_model_and_its_bad_checkpoint_exit(tiny_bert, tmp_path, capsys, monkeypatch):
    from ctxlib import supplement

    rows = [r for r in supplement.load() if r.word == "苹果"]
    monkeypatch.setattr(supplement, "load", lambda *a, **k: rows)
    r = sp.scores(tiny_bert)
    n_layers = len(tiny_bert.layer_names)
    assert r["words"] == 1 and len(r["probe_accuracy"]) == len(r["pair_ranking"]) == n_layers
    assert all(0.0 <= x <= 1.0 for x in r["probe_accuracy"] + r["pair_ranking"]) and 0.0 < r["majority"] < 1.0
    bad = tmp_path / "ck"
    bad.mkdir()
    assert sp.main([str(bad)]) == 2
    assert capsys.readouterr().err.startswith("sense_probe: cannot load")

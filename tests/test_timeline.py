"""The training timeline: snapshots at log-spaced steps, a documented schema, small files, replayable vectors."""
import json

import numpy as np
import pytest

import ctxlib
from ctxlib.training import timeline
from ctxlib.training.bert import train


def test_snapshot_steps_are_log_spaced():
    s = timeline.snapshot_steps(28000)
    assert s[0] == 0 and s[-1] == 28000 and len(s) == 16 and s == sorted(set(s))
    ratios = np.diff(np.log(s[2:]))
    assert ratios.max() < 3 * ratios.min()


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory):
    from ctxlib import corpus

    ps = corpus.load("all", "train")
    rng = np.random.default_rng(0)
    pars = [ps[i] for i in sorted(rng.permutation(len(ps))[:300])]
    return ctxlib.load(train(preset="tiny", device="cpu", out=tmp_path_factory.mktemp("tl") / "b", paragraphs=pars))


def test_schema_round_trip_and_size(tiny_bert, tmp_path):
    enc = tiny_bert
    losses = iter([5.0, 4.0, 3.0])
    tl = timeline.Timeline("bert", 100, enc.model, lambda: enc, lambda: next(losses))
    tl.maybe_record(0, 0, 0.0, None)
    assert 6 not in tl.steps
    tl.maybe_record(6, 999, 1.5, 6.0)  # not a snapshot step: nothing recorded
    tl.maybe_record(1, 100, 0.5, 7.0)
    tl.maybe_record(100, 9000, 9.0, 4.5, force=True)
    assert [s["step"] for s in tl.snapshots] == [0, 1, 100]
    tl.save(tmp_path)
    data, arrays = timeline.load(tmp_path)
    assert data["schema"] == timeline.SCHEMA and data["kind"] == "bert" and data["layer_names"] == enc.layer_names
    snap = data["snapshots"][-1]
    assert set(snap) >= {"step", "tokens", "wall_s", "train_loss", "valid_loss", "sense_accuracy", "sense_accuracy_mean",
                         "pair_ranking_mean", "fill_mask", "lm"}
    assert snap["valid_loss"] == 3.0 and snap["tokens"] == 9000
    assert len(snap["fill_mask"]) == len(data["fill_mask_sentences"]) and len(snap["fill_mask"][0]) == 5
    n = sum(len(s["sentences"]) for s in data["sets"].values())
    L = len(enc.layer_names)
    assert arrays["vectors_q"].shape == (3, n, L, enc.dim) and arrays["vectors_q"].dtype == np.int8
    assert arrays["attention_0"].shape[:3] == (3, enc.model.cfg.layers, enc.model.cfg.heads)
    # the stored vectors replay the model's: dequantised within 1% of the norm
    first = next(iter(data["sets"]))
    V = enc.word_vectors(data["sets"][first]["sentences"], first)
    got = timeline.dequantize(arrays["vectors_q"][-1, :len(V)], arrays["vectors_scale"][-1, :len(V)])
    assert np.abs(got - V).max() <= 0.01 * np.abs(V).max()
    size = (tmp_path / "timeline.json").stat().st_size + (tmp_path / "timeline.npz").stat().st_size
    assert size * 16 / 3 < 4 * 2**20  # 16 snapshots stay under 4 MiB


def test_recording_leaves_a_training_model_in_training_mode(tiny_bert):
    enc = tiny_bert
    enc.model.train()
    tl = timeline.Timeline("bert", 10, enc.model, lambda: type(enc)("live", enc.config, {}, None, enc.model, enc.tokenizer),
                           lambda: 1.0)
    tl.maybe_record(0, 0, 0.0, None)
    assert enc.model.training
    enc.model.eval()


def test_unreadable_timeline_says_which_files(tmp_path):
    with pytest.raises(ValueError, match="no training timeline"):
        timeline.load(tmp_path)
    (tmp_path / "timeline.json").write_text(json.dumps({"schema": 99}))
    (tmp_path / "timeline.npz").write_bytes(b"")
    with pytest.raises(ValueError, match="schema"):
        timeline.load(tmp_path)

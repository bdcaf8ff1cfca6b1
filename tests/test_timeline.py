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
    assert set(snap) >= {
        "step",
        "tokens",
        "wall_s",
        "train_loss",
        "valid_loss",
        "sense_accuracy",
        "sense_accuracy_mean",
        "pair_ranking_mean",
        "fill_mask",
        "lm",
    }
    assert snap["valid_loss"] == 3.0 and snap["tokens"] == 9000
    assert len(snap["fill_mask"]) == len(data["fill_mask_sentences"]) and len(snap["fill_mask"][0]) == 5
    n = sum(len(s["sentences"]) for s in data["sets"].values())
    L = len(enc.layer_names)
    assert arrays["vectors_q"].shape == (3, n, L, enc.dim) and arrays["vectors_q"].dtype == np.int8
    assert arrays["attention_0"].shape[:3] == (3, enc.model.cfg.layers, enc.model.cfg.heads)
    # the stored vectors replay the model's: dequantised within 1% of the norm
    first = next(iter(data["sets"]))
    V = enc.word_vectors(data["sets"][first]["sentences"], first)
    got = timeline.dequantize(arrays["vectors_q"][-1, : len(V)], arrays["vectors_scale"][-1, : len(V)])
    assert np.abs(got - V).max() <= 0.01 * np.abs(V).max()
    size = (tmp_path / "timeline.json").stat().st_size + (tmp_path / "timeline.npz").stat().st_size
    assert size * 16 / 3 < 4 * 2**20  # 16 snapshots stay under 4 MiB


def test_recording_leaves_a_training_model_in_training_mode(tiny_bert):
    enc = tiny_bert
    enc.model.train()
    tl = timeline.Timeline(
        "bert", 10, enc.model, lambda: type(enc)("live", enc.config, {}, None, enc.model, enc.tokenizer), lambda: 1.0
    )
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


@pytest.fixture(scope="module")
def tiny_gpt(tmp_path_factory):
    from ctxlib import corpus
    from ctxlib.training import gpt

    ps = corpus.load("all", "train")
    pars = [ps[i] for i in sorted(np.random.default_rng(0).permutation(len(ps))[:300])]
    return ctxlib.load(gpt.train(preset="tiny", device="cpu", out=tmp_path_factory.mktemp("tl") / "g", paragraphs=pars))


def test_gpt_records_next_characters_and_attention(tiny_gpt, tmp_path):
    """GPT has neither fill_mask nor lm_topk: the timeline records its next character after the text before each
    blank (as a forward-only 'lm') and the attention of the fixed sentences, as it does for BERT."""
    enc = tiny_gpt
    tl = timeline.Timeline("gpt", 10, enc.model, lambda: enc, lambda: 2.0)
    tl.maybe_record(0, 0, 0.0, None)
    tl.maybe_record(10, 500, 1.0, 3.0, force=True)
    tl.save(tmp_path)
    data, arrays = timeline.load(tmp_path)
    items = data["lm_sentences"]
    assert len(items) == len(timeline.FILL_MASK_SENTENCES) == len(timeline.FILL_MASK_ANSWERS)
    first = items[0]
    assert first["word"] == "奶" and first["text"][: first["start"]] == "早餐我喝了一杯热牛"
    snap = data["snapshots"][-1]
    assert snap["fill_mask"] is None and len(snap["lm"]) == len(items)
    assert set(snap["lm"][0]) == {"forward"} and len(snap["lm"][0]["forward"]) == 5
    got = [(c, round(p, 4)) for c, p in enc.next_char("早餐我喝了一杯热牛", topk=5)]
    assert [tuple(x) for x in snap["lm"][0]["forward"]] == got
    assert data["attention_sentences"] == timeline.ATTENTION_SENTENCES
    assert data["attention_tokens"][0][0] == "[CLS]" and "[SEP]" not in data["attention_tokens"][0]
    a = arrays["attention_0"]
    assert a.shape[:3] == (2, enc.model.cfg.layers, enc.model.cfg.heads)
    assert np.allclose(np.triu(a[-1, 0, 0].astype(np.float32), 1), 0)  # causal: nothing above the diagonal


def test_an_array_some_snapshots_lack_is_not_saved_misaligned(tiny_gpt, tmp_path):
    enc = tiny_gpt
    tl = timeline.Timeline("gpt", 10, enc.model, lambda: enc, lambda: 2.0)
    tl.maybe_record(0, 0, 0.0, None)
    tl.arrays["attention_0"].pop()  # as a resumed run whose first snapshots were recorded without attention
    tl.save(tmp_path)
    _, arrays = timeline.load(tmp_path)
    assert "attention_0" not in arrays and "attention_1" in arrays and len(arrays["vectors_q"]) == 1

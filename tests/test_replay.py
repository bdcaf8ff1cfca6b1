"""ctxlib.replay (the training page's numbers) and ctxlib.viz.training (its figures), on small timelines written
by hand in the timeline's schema: one projection for all steps, the dequantize round trip, missing fields."""

import json

import numpy as np
import pytest

from ctxlib import replay
from ctxlib.training import timeline as tl
from ctxlib.viz import training as vt

SETS = {
    "苹果": {
        "sentences": ["苹果真好吃", "苹果手机很好用", "我买了一斤苹果", "苹果电脑很贵"],
        "labels": ["水果", "品牌", "水果", "品牌"],
    },
    "打": {"sentences": ["他打了我", "我们打球", "给我打电话"], "labels": ["打人", "打球", "打电话"]},
}
STEPS = [0, 1, 10, 100]


def write_timeline(d, kind="bert", vectors=None, fill_mask=True, lm=False, attention=True, seed=0):
    """A timeline folder in the recorder's schema: S=4 snapshots, N=7 sentences, L=3 layers, D=8."""
    rng = np.random.default_rng(seed)
    S, N, L, D = len(STEPS), 7, 3, 8
    V = rng.standard_normal((S, N, L, D)).astype(np.float32) if vectors is None else vectors
    q, scale = tl._quantize(V)
    arrays = {"vectors_q": q, "vectors_scale": scale}
    toks = [["[CLS]", "苹", "果", "好", "[SEP]"]]
    if attention:
        a = rng.random((S, 2, 2, 5, 5)).astype(np.float32)
        arrays["attention_0"] = (a / a.sum(-1, keepdims=True)).astype(np.float16)
    snaps = []
    for k, step in enumerate(STEPS):
        acc = {w: [0.5, 0.5 + 0.1 * k, 0.5 + 0.15 * k] for w in SETS}
        fm = (
            [[["的", 0.3 - 0.05 * k], ["奶", 0.1 * k], ["了", 0.05], ["水", 0.02], ["茶", 0.01]]] if fill_mask else None
        )
        if k == len(STEPS) - 1 and fill_mask:
            fm = [[["奶", 0.6], ["的", 0.1], ["了", 0.05], ["水", 0.02], ["茶", 0.01]]]
        snaps.append(
            {
                "step": step,
                "tokens": step * 100,
                "wall_s": float(step),
                "train_loss": None if step == 0 else 9.0 - k,
                "valid_loss": 9.5 - k,
                "sense_accuracy": acc,
                "sense_accuracy_mean": list(np.mean(list(acc.values()), 0)),
                "pair_ranking_mean": [0.5] * L,
                "fill_mask": fm,
                "lm": [{"forward": [["奶", 0.2], ["水", 0.1]]}] if lm else None,
            }
        )
    data = {
        "schema": tl.SCHEMA,
        "kind": kind,
        "layer_names": ["embeddings", "layer 1", "layer 2"],
        "planned_steps": 100,
        "sets": SETS,
        "fill_mask_sentences": [tl.FILL_MASK_SENTENCES[0]] if fill_mask else [],
        "lm_sentences": [{"text": "早餐我喝了一杯热牛奶。", "index": 9, "word": "奶", "start": 9}] if lm else [],
        "attention_sentences": ["苹果好"] if attention else [],
        "attention_tokens": toks if attention else [],
        "snapshots": snaps,
    }
    d.mkdir(parents=True, exist_ok=True)
    (d / "timeline.json").write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    np.savez_compressed(d / "timeline.npz", **arrays)
    (d / "config.json").write_text(
        json.dumps({"kind": kind, "summary": {"loss_history": [[5, 8.0], [50, 6.0], [500, 1.0]]}})
    )
    return V


def test_load_and_series(tmp_path):
    write_timeline(tmp_path / "bert")
    rp = replay.load(tmp_path / "bert")
    assert rp.kind == "bert" and rp.steps == STEPS and rp.words == ["苹果", "打"]
    ls = replay.losses(rp)
    assert ls["train"][0] is None and ls["valid"] == [9.5, 8.5, 7.5, 6.5] and ls["tokens"][-1] == 10000
    assert rp.loss_history == [(5, 8.0), (50, 6.0)]  # the log stops at the last snapshot
    assert replay.sense_accuracy(rp).shape == (4, 3) and replay.sense_accuracy(rp, "打")[-1, 2] == pytest.approx(0.95)
    assert replay.chance(rp, "苹果") == 0.5 and replay.chance(rp, "打") == pytest.approx(1 / 3)


def test_vectors_dequantize_round_trip(tmp_path):
    V = write_timeline(tmp_path / "bert")
    rp = replay.load(tmp_path / "bert")
    got = replay.vectors(rp, "打", 2)  # the set after 苹果's 4 sentences: rows 4..6
    ref = V[:, 4:7, 2]
    assert got.shape == (4, 3, 8)
    assert np.abs(got - ref).max() <= np.abs(ref).max(-1).max() / 127  # within one int8 step of each vector's scale
    with pytest.raises(KeyError):
        replay.set_rows(rp, "香蕉")


def test_one_projection_for_all_steps():
    """The map of every step uses the same axes: a step whose vectors equal another step's lands on the same points,
    and a step whose vectors are those of another step moved by a common offset or scaled (before centring) too."""
    rng = np.random.default_rng(1)
    base = rng.standard_normal((5, 16))
    other = rng.standard_normal((5, 16))
    V = np.stack([base, other, base.copy(), 3.0 * base])  # (S=4, n=5, D)
    pr = replay.project_steps(V)
    assert pr.coords.shape == (4, 5, 2)
    assert np.allclose(pr.coords[0], pr.coords[2], atol=1e-5) and np.allclose(pr.coords[0], pr.coords[3], atol=1e-5)
    assert not np.allclose(pr.coords[0], pr.coords[1], atol=1e-3)
    x0, x1, y0, y1 = pr.bounds
    assert x0 <= pr.coords[..., 0].min() and pr.coords[..., 0].max() <= x1 and y0 <= pr.coords[..., 1].min()
    # the axes are fitted on all steps: projecting step 0 alone gives other axes than fitting on step 0 alone would
    alone = replay.project_steps(V[:1])
    assert 0 < pr.explained[0] < 1 and alone.explained[0] >= pr.explained[0] - 1e-9


def test_same_size_and_spread():
    rng = np.random.default_rng(2)
    U = rng.standard_normal((6, 32))
    tight = U[0] + 0.01 * U  # tokens almost on one spot
    V = np.stack([tight, U])
    raw = replay.project_steps(V, same_size=False)
    eq = replay.project_steps(V, same_size=True)
    assert raw.spread[0] < 0.05 < raw.spread[1] and np.allclose(raw.spread, eq.spread)
    size = lambda c: np.sqrt((c**2).sum(-1).mean())  # noqa: E731
    assert size(raw.coords[0]) < 0.1 * size(raw.coords[1])  # one scale: the tight step is a dot
    assert size(eq.coords[0]) == pytest.approx(size(eq.coords[1]))  # same size: its arrangement is visible
    same = replay.project_steps(np.stack([np.tile(U[0], (6, 1))] * 2))  # one vector in every sentence
    assert np.all(same.spread == 0) and np.all(same.coords == 0)


def test_rounding_note(tmp_path):
    rng = np.random.default_rng(3)
    base = rng.standard_normal(8)
    V = np.tile(base, (4, 7, 3, 1)).astype(np.float32)
    V[:, :, 2] += 1e-4 * rng.standard_normal((4, 7, 8))  # layer 2: differences far below int8 rounding
    V[:, :, 1] = rng.standard_normal((4, 7, 8))  # layer 1: real differences
    write_timeline(tmp_path / "bert", vectors=V)
    rp = replay.load(tmp_path / "bert")
    assert replay.projection(rp, "苹果", 0).spread[0] == 0  # identical vectors: no spread, no "rounding" note
    assert not replay.mostly_rounding(replay.projection(rp, "苹果", 0), 0)
    assert not replay.mostly_rounding(replay.projection(rp, "苹果", 1), 0)


def test_answers_and_missing_fields(tmp_path):
    write_timeline(tmp_path / "bert")
    rp = replay.load(tmp_path / "bert")
    rows = replay.fill_mask_rows(rp, 3)
    assert rows[0]["answer"] == "奶" and rows[0]["top"][0] == ("奶", 0.6)
    hits, total = replay.answer_hits(rp)
    assert hits == {"fill_mask": [0, 0, 0, 1]} and total == 1
    assert replay.lm_rows(rp, 0) is None
    assert [s for s, _ in replay.attention_sentences(rp)] == ["苹果好"] and replay.attention(rp, 0, 1).shape == (
        2,
        2,
        5,
        5,
    )
    shares = replay.head_shares(rp, 0)
    assert set(shares) == set(replay.SHARES) and shares["prev"].shape == (4, 2, 2)
    assert np.all(shares["prev"] + shares["next"] + shares["self"] + shares["sep"] + shares["cls"] <= 1 + 1e-3)
    # a GPT timeline written before its answers and attention were recorded
    write_timeline(tmp_path / "gpt", kind="gpt", fill_mask=False, attention=False)
    rp = replay.load(tmp_path / "gpt")
    assert replay.fill_mask_rows(rp, 0) is None and replay.lm_rows(rp, 0) is None and replay.answer_hits(rp) is None
    assert (
        replay.attention_sentences(rp) == []
        and replay.attention(rp, 0, 0) is None
        and replay.head_shares(rp, 0) is None
    )
    # and one written after: next-character answers as a forward-only 'lm'
    write_timeline(tmp_path / "gpt2", kind="gpt", fill_mask=False, lm=True)
    rp = replay.load(tmp_path / "gpt2")
    r = replay.lm_rows(rp, 0)[0]
    assert r["prompt"] == "早餐我喝了一杯热牛" and r["backward"] is None and r["forward"][0] == ("奶", 0.2)
    assert replay.answer_hits(rp) == ({"forward": [1, 1, 1, 1]}, 1)


def test_find_and_bad_files(tmp_path, monkeypatch):
    from ctxlib import checkpoint

    monkeypatch.setattr(checkpoint, "CHECKPOINT_DIR", tmp_path)
    write_timeline(tmp_path / "bert")
    (tmp_path / "elmo").mkdir()
    found = replay.find(("word2vec", "elmo", "bert"))
    assert found == {"word2vec": None, "elmo": None, "bert": tmp_path / "bert"}
    arr = dict(np.load(tmp_path / "bert" / "timeline.npz"))
    arr["vectors_q"] = arr["vectors_q"][:2]
    np.savez(tmp_path / "bert" / "timeline.npz", **arr)
    with pytest.raises(ValueError, match="2 rows for 4 snapshots"):
        replay.load("bert")
    assert replay.nearest_index(STEPS, "12") == 2 and replay.nearest_index(STEPS, "x") == 3


def test_figures_mark_the_step_on_a_log_axis(tmp_path):
    write_timeline(tmp_path / "bert")
    rp = replay.load(tmp_path / "bert")
    labels = {
        "title": "t",
        "train": "train",
        "valid": "valid",
        "history": "log",
        "step": "step",
        "loss": "loss",
        "now": "now",
        "accuracy": "acc",
        "chance": "chance",
        "word": "w",
        "count": "n",
        "share": "s",
    }
    fig = vt.loss_figure(replay.losses(rp), rp.loss_history, 10, labels)
    assert fig.layout.xaxis.type == "log" and fig.layout.xaxis.ticktext[0] == "0"
    assert [t.name for t in fig.data] == ["log", "train", "valid"] and list(fig.data[1].x) == [
        1,
        10,
        100,
    ]  # no loss at 0
    assert fig.layout.shapes[-1].x0 == 10 and fig.data[2].x[0] == vt.STEP0_X
    fig = vt.accuracy_figure(rp.steps, replay.sense_accuracy(rp), ["a", "b", "c"], 0, labels, 0.5, np.zeros(4))
    assert len(fig.data) == 4 and fig.layout.shapes[-1].x0 == vt.STEP0_X
    pr = replay.projection(rp, "苹果", 2)
    fig = vt.map_figure(pr.coords[2], pr.coords[1], rp.labels("苹果"), ["<b>x</b>"] * 4, pr.bounds, "<script>")
    assert [t.name for t in fig.data[1:]] == ["品牌", "水果"] and "<script>" not in fig.layout.title.text
    assert tuple(fig.layout.xaxis.range) == pytest.approx(pr.bounds[:2])
    assert (
        vt.answer_text([("奶", 0.41), ("水", 0.09), ("茶", 0.004), ("的", 0.0001)])
        == "奶 41% · 水 9% · 茶 0.4% · 的 <0.1%"
    )

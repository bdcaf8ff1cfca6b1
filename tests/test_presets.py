"""One `Preset` shape for the three models' training presets, and the plans that runs (fresh or resumed) get."""

import dataclasses

import pytest

from ctxlib.models.bert import BertConfig
from ctxlib.models.elmo import ElmoConfig
from ctxlib.models.word2vec import Word2VecConfig
from ctxlib.training import bert, elmo, gpt, word2vec
from ctxlib.training.presets import Preset

MODULES = {
    "bert": (bert, BertConfig),
    "elmo": (elmo, ElmoConfig),
    "word2vec": (word2vec, Word2VecConfig),
    "gpt": (gpt, BertConfig),
}


def test_all_presets_are_presets_with_the_same_fields():
    names = [f.name for f in dataclasses.fields(Preset)]
    assert names == ["model", "steps", "lr", "warmup", "budget_s", "amp", "timeline", "resume_file", "data", "name"]
    for kind, (mod, config) in MODULES.items():
        assert {"tiny", "default"} <= set(mod.PRESETS), kind
        data_keys = {frozenset(p.data) for p in mod.PRESETS.values()}
        assert len(data_keys) == 1, f"{kind}: every preset names the same data keys, so code needs no fallbacks"
        config_fields = {f.name for f in dataclasses.fields(config)}
        for name, p in mod.PRESETS.items():
            assert type(p) is Preset and p.name == name, (kind, name)
            assert [f.name for f in dataclasses.fields(p)] == names
            assert set(p.model) <= config_fields, (kind, name, set(p.model) - config_fields)
            assert p.amp in ("auto", "bf16", "off") and p.budget_s >= 0 and p.steps >= 0
            if kind != "word2vec":
                assert p.steps > 0 and p.lr > 0 and p.warmup > 0, (kind, name)


@pytest.mark.parametrize(
    "kind, name, data",
    [
        ("bert", "tiny", {"batch": 16, "max_paragraphs": 400, "min_count": 1, "whole_word": False}),
        ("bert", "long", {"batch": 32, "max_paragraphs": None, "min_count": 2, "whole_word": 0.5}),
        (
            "elmo",
            "default",
            {"paragraphs": 0, "batch_tokens": 1600, "max_len": 50, "bench_steps": 8, "valid_sentences": 3000},
        ),
        ("word2vec", "tiny", {"sentences": 2000}),
        ("word2vec", "default", {"sentences": None}),
    ],
)
def test_preset_data_keys(kind, name, data):
    assert MODULES[kind][0].PRESETS[name].data == data


def test_time_budget_and_amp_as_before():
    """One name for the time budget (budget_s); ELMo's presets without bf16 say amp="off" (its old fallback)."""
    assert bert.PRESETS["default"].budget_s == 6400.0 and bert.PRESETS["tiny"].budget_s == 0.0
    assert elmo.PRESETS["default"].budget_s == 6600.0 and elmo.PRESETS["long"].budget_s == 0.0
    assert [p.amp for p in elmo.PRESETS.values()] == ["off", "off", "auto"]
    assert [p.amp for p in bert.PRESETS.values()] == ["auto"] * 4
    assert not bert.PRESETS["tiny"].timeline and not elmo.PRESETS["tiny"].timeline
    assert bert.PRESETS["long"].timeline and elmo.PRESETS["long"].timeline


def test_replan_replaces_steps_only():
    p = bert.PRESETS["long"]
    q = p.replan(17000)
    assert q == dataclasses.replace(p, steps=17000) and q.steps == 17000 and p.steps == 28000
    assert p.replan(None) is p and p.replan(0) is p
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.steps = 1


def test_wide_bert_is_long_with_only_the_width_changed():
    """The width lever is measured against `long`: everything but the width (hidden, heads, ffn), the learning rate
    (halved for the wider model, as measured) and the planned length is the same, and 64-wide heads as before."""
    long, wide = bert.PRESETS["long"], bert.PRESETS["wide"]
    assert {k: v for k, v in wide.model.items() if k not in ("hidden", "heads", "ffn")} == {
        k: v for k, v in long.model.items() if k not in ("hidden", "heads", "ffn")
    }
    assert wide.model["hidden"] > long.model["hidden"] and wide.model["ffn"] == 4 * wide.model["hidden"]
    assert wide.model["hidden"] // wide.model["heads"] == long.model["hidden"] // long.model["heads"]
    assert wide.lr == long.lr / 2
    assert dataclasses.replace(wide, model=long.model, steps=long.steps, lr=long.lr, name="long") == long


def test_train_takes_a_preset_or_a_name():
    """One helper turns a name into its module's preset; an ad-hoc Preset passes as it is, but needs a name (the
    summary's "preset" and what --resume looks up)."""
    from ctxlib.training.presets import resolve

    for kind, (mod, _) in MODULES.items():
        assert resolve(kind, "tiny") is mod.PRESETS["tiny"]
        with pytest.raises(ValueError, match=r"unknown preset 'nope'; choose one of \['tiny'"):
            resolve(kind, "nope")
    mine = dataclasses.replace(bert.PRESETS["tiny"], name="live-7")
    assert resolve("bert", mine) is mine
    with pytest.raises(ValueError, match="needs a name"):
        resolve("bert", Preset(model={}))


@pytest.mark.parametrize(
    "option", [{"resume": "run"}, {"steps": 5}, {"stretch": 1.0}, {"amp": "off"}, {"init_from": "run"}]
)
def test_word2vec_refuses_the_resumable_runs_options(option, tmp_path):
    with pytest.raises(ValueError, match="word2vec trains in one go"):
        word2vec.train("tiny", device="cpu", out=tmp_path / "w", **option)
    assert not (tmp_path / "w").exists()
    with pytest.raises(TypeError):
        word2vec.train("tiny", device="cpu", out=tmp_path / "w", no_such_option=1)

"""The one registry of model kinds (ctxlib.kinds): every list reads it, so one new entry shows everywhere."""

from pathlib import Path

import app_fakes
import pytest
from streamlit.testing.v1 import AppTest

from ctxlib import checkpoint, kinds, lesson, live, replay
from ctxlib.cli import main

PAGE = str(Path(__file__).resolve().parent.parent / "pages" / "1_Type_vs_token.py")


@pytest.fixture
def toy_kind(monkeypatch):
    """A fake kind "toy": shipped, trainable (the word2vec module stands in), live, static vectors."""
    monkeypatch.setitem(
        kinds.REGISTRY,
        "toy",
        kinds.Kind("toy", "app_fakes:FakeEncoder", "static", 15, "ctxlib.training.word2vec", shipped=True, live=True),
    )
    return "toy"


def test_the_shipped_kinds_in_display_order():
    assert kinds.names(shipped=True) == ("word2vec", "elmo", "bert", "gpt")
    assert kinds.names(uploadable=True) == ("word2vec", "elmo", "bert")  # GPT trains on the built-in corpus only
    assert kinds.names(timeline=True) == ("elmo", "bert", "gpt")
    assert kinds.names(view="attention", shipped=True) == ("bert", "gpt")
    assert kinds.names(view="fill_mask") == ("bert",) and kinds.names(view="generate") == ("gpt",)
    assert "hf" in kinds.names() and "hf" not in kinds.names(trainable=True)


def test_views_follow_the_family():
    class Hf:
        kind, family, has_nsp = "hf", "masked", False

    assert kinds.views_of(Hf()) == {"vectors", "attention", "fill_mask"}  # no NSP head: no NSP view
    Hf.has_nsp = True
    assert "nsp" in kinds.views_of(Hf())
    Hf.family = "causal"
    assert kinds.views_of(Hf()) == {"vectors", "attention", "generate"}
    assert kinds.family_of(Hf()) == "causal"
    with pytest.raises(ValueError, match="unknown family"):
        kinds.Kind("bad", "x:Y", "quantum", 1)
    with pytest.raises(KeyError, match="unknown model kind"):
        kinds.get("nope")
    with pytest.raises(ValueError, match="not trained by ctxlab"):
        kinds.training_module("hf")


def test_a_new_kind_shows_in_every_list(toy_kind, monkeypatch, capsys):
    assert kinds.names(shipped=True) == ("word2vec", "toy", "elmo", "bert", "gpt")  # its order: after word2vec
    assert "toy" in lesson.Step("cosine", "t", "q", "a", params={"word": "w", "sentences": ["a", "b"]}).models()
    assert checkpoint.rebuild_command("toy") == "python -m ctxlib train toy"
    assert "toy" in replay.find()
    live.LiveSpec("toy")  # the training page accepts it
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    assert "toy" in capsys.readouterr().out
    monkeypatch.setattr(checkpoint, "CHECKPOINT_DIR", checkpoint.CHECKPOINT_DIR)
    assert main(["info"]) == 0
    assert "toy        missing: build with `python -m ctxlib train toy`" in capsys.readouterr().out


def test_a_new_kind_shows_in_the_pickers(toy_kind, monkeypatch):
    encs = app_fakes.install(monkeypatch, names=("word2vec", "elmo", "bert", "gpt", "toy"))
    encs["toy"] = app_fakes.FakeEncoder("toy", 1)
    from ctxlib.app import loaders

    assert loaders.model_order()[:2] == ("word2vec", "toy")
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.query_params["lang"] = "en"
    at.run()
    assert not at.exception, at.exception
    assert "toy" in at.sidebar.multiselect[0].options

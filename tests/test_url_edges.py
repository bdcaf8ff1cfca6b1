"""The edges of every whole-number and choice URL parameter (issue: tests that check what the app says).

For each page, the lowest allowed value of every whole-number parameter opens without a notice and is what the page
shows (it writes the value back into the link), the highest likewise, and one past each edge falls back to the default
with the notice naming that parameter. For a choice parameter, its first and last options open without a notice and a
value that is not an option gets one. Stand-in models (app_fakes) except on the Transformer page, which needs a real
model's weights (the shipped BERT; skipped when it is missing)."""

from pathlib import Path

import app_fakes
import pytest
from app_pages import shipped, use_checkpoint_dir
from streamlit.testing.v1 import AppTest
from test_app_atlas import fake_occurrences
from test_replay import write_timeline

import ctxlib
from ctxlib import checkpoint, corpus, lesson
from ctxlib.app import text_fit

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def fakes(monkeypatch):
    monkeypatch.setenv("CTXLAB_NO_PREWARM", "1")
    monkeypatch.setattr(corpus, "occurrences", fake_occurrences)
    return app_fakes.install(monkeypatch)


def _open(page: str, **qp) -> AppTest:
    at = AppTest.from_file(str(ROOT / page), default_timeout=120)
    at.query_params.update({"lang": "en", **qp})
    at.run()
    assert not at.exception, at.exception
    return at


def _said(at) -> str:
    return " ".join(e.value for kind in ("caption", "info", "warning") for e in getattr(at, kind)).replace("\\", "")


def _qp(at, param: str) -> str:
    v = at.query_params[param]
    return v[0] if isinstance(v, list) else v


def _check_edges(page: str, ints: dict[str, tuple[int, int, int]], **fixed):
    """`ints`: {param: (lo, hi, default)}. All parameters at lo, then all at hi: no notice, the values kept; then all one
    below lo, then all one above hi: each falls back to its default, with a notice quoting it."""
    for edge in (0, 1):
        at = _open(page, **fixed, **{p: str(e[edge]) for p, e in ints.items()})
        said = _said(at)
        assert "The link's" not in said, said
        for p, e in ints.items():
            assert _qp(at, p) == str(e[edge]), (p, e[edge])
    for edge, step in ((0, -1), (1, 1)):
        past = {p: str(e[edge] + step) for p, e in ints.items()}
        at = _open(page, **fixed, **past)
        said = _said(at)
        for p, e in ints.items():
            assert f"The link's {p}={past[p]} is not" in said, (p, said)
            assert _qp(at, p) == str(e[2]), (p, _qp(at, p))


def _check_choice(page: str, param: str, options: list[str], get=None, **fixed):
    """The first and the last option open without a notice (and are kept); an unknown value gets one. `get(at)`: the
    value shown (default: the value the page writes back into the link)."""
    get = get or (lambda at: _qp(at, param))
    for v in (options[0], options[-1]):
        at = _open(page, **fixed, **{param: v})
        assert f"The link's {param}=" not in _said(at), (v, _said(at))
        assert get(at) == v
    at = _open(page, **fixed, **{param: "nosuch"})
    assert f"The link's {param}=nosuch is not" in _said(at), _said(at)
    assert get(at) == options[0]


def _real_models(monkeypatch, *names):
    """The shipped checkpoints (skipped when missing) instead of the stand-ins: pages that need a model's own weights."""
    for name in names:
        shipped(name)
    use_checkpoint_dir(monkeypatch, checkpoint.CHECKPOINT_DIR)


# -- whole numbers -------------------------------------------------------------------------------------------
def test_lesson_step_edges():
    n = len(lesson.load("default").steps)
    _check_edges("pages/0_Lesson.py", {"step": (1, n, 1)})


def test_last_lesson_step_is_the_last_steps_view():
    les = lesson.load("default")
    at = _open("pages/0_Lesson.py", step=str(len(les.steps)))
    assert at.header[0].value == les.steps[-1].text("title", "en")
    assert any(f"step {len(les.steps)} of {len(les.steps)}" in m.value for m in at.markdown)  # the position line
    assert at.button(key="lesson_next").disabled and not at.button(key="lesson_prev").disabled


def test_atlas_number_edges():
    # cap: one of 50..1000 (49 and 1001 are not options); k: 2..8; layer: the stand-in ELMo's 0..2 (default: the top)
    _check_edges("pages/2_Polysemy_atlas.py", {"cap": (50, 1000, 300), "k": (2, 8, 3), "layer": (0, 2, 2)}, word="苹果")


def test_gpt_writing_number_edges():
    from ctxlib import writing

    _check_edges(
        "pages/6_GPT_writing.py",
        {"n": (1, 120, 30), "k": (1, 50, 20), "seed": (0, 10**6, 0), "ng": (0, 8, writing.NO_REPEAT_NGRAM)},
    )


def test_type_token_floor_edges():
    _check_edges("pages/1_Type_vs_token.py", {"floor": (0, text_fit.FLOOR_MAX, text_fit.FLOOR)}, near="1")


def test_elmo_floor_edges(monkeypatch):
    """The ELMo page reads ?floor= when the nearest-words switch is turned on."""
    _real_models(monkeypatch, "elmo")
    for value, shown in (
        (0, 0),
        (text_fit.FLOOR_MAX, text_fit.FLOOR_MAX),
        (-1, text_fit.FLOOR),
        (text_fit.FLOOR_MAX + 1, text_fit.FLOOR),
    ):
        at = _open("pages/3_ELMo_layers.py", floor=str(value))
        at.toggle(key="elmo_nn").set_value(True).run()
        assert not at.exception, at.exception
        assert at.number_input(key="elmo_floor").value == shown and _qp(at, "floor") == str(shown)
        assert (f"The link's floor={value} is not" in _said(at)) == (value != shown), _said(at)


def test_training_layer_edges(tmp_path, monkeypatch):
    write_timeline(tmp_path / "bert")  # L=3 layers: 0..2, default the top one
    use_checkpoint_dir(monkeypatch, tmp_path)
    _check_edges("pages/9_Training.py", {"layer": (0, 2, 2)}, model="bert")


def test_transformer_layer_and_head_edges(monkeypatch):
    _real_models(monkeypatch, "bert")
    cfg = ctxlib.load("bert").model.cfg
    _check_edges("pages/4_Transformer.py", {"layer": (1, cfg.layers, 1), "head": (1, cfg.heads, 1)}, model="bert")


# -- choices -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("param,options", [("colour", ["pos", "source", "kmeans"]), ("proj", ["pca", "tsne", "umap"])])
def test_atlas_choice_edges(param, options):
    from ctxlib.projection import METHOD_NAMES

    _check_choice("pages/2_Polysemy_atlas.py", param, list(METHOD_NAMES) if param == "proj" else options, word="苹果")


def test_type_token_choice_edges():
    from ctxlib import examples
    from ctxlib.projection import METHOD_NAMES

    _check_choice("pages/1_Type_vs_token.py", "proj", list(METHOD_NAMES))
    _check_choice(
        "pages/1_Type_vs_token.py", "near", ["0", "1"], get=lambda at: str(int(at.toggle(key="tt_near_w").value))
    )
    _check_choice("pages/1_Type_vs_token.py", "half", ["both", "backward"], models="elmo")
    sets = list(examples.EXAMPLE_SETS)
    _check_choice("pages/1_Type_vs_token.py", "set", [sets[0], sets[-1]])


def test_training_choice_edges(tmp_path, monkeypatch):
    write_timeline(tmp_path / "bert")
    write_timeline(tmp_path / "gpt", kind="gpt", fill_mask=False, attention=False)
    use_checkpoint_dir(monkeypatch, tmp_path)
    _check_choice("pages/9_Training.py", "model", ["bert", "gpt"])
    _check_choice("pages/9_Training.py", "word", ["苹果", "打"], model="bert")


def test_model_choice_edges():
    _check_choice("pages/2_Polysemy_atlas.py", "model", ["elmo", "word2vec", "bert", "gpt"], word="苹果")


def test_attention_and_transformer_model_choice_edges(monkeypatch):
    _real_models(monkeypatch, "bert", "gpt")
    _check_choice("pages/4_BERT_attention.py", "model", ["bert", "gpt"])
    _check_choice("pages/4_Transformer.py", "model", ["bert", "gpt"])


def test_training_mode_edges(tmp_path, monkeypatch):
    write_timeline(tmp_path / "bert")
    use_checkpoint_dir(monkeypatch, tmp_path)
    _check_choice("pages/9_Training.py", "mode", ["replay", "live"])

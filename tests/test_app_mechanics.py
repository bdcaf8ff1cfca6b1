"""AppTest for the Transformer mechanics page: opens for BERT and GPT in both languages, the shown numbers are the
model's own and follow the layer/head pickers, the positions step shows the measured layer-0 check, bad input gets
a message and the page recovers."""

import json

import numpy as np
import pytest
import torch
from app_pages import PAGES, shipped, teachers_text, use_checkpoint_dir
from streamlit.testing.v1 import AppTest
from test_app_chinese import _english

from ctxlib import mechanics
from ctxlib.app import i18n

PAGE = str(PAGES / "4_Transformer.py")
TEXT = "苹果很好吃，苹果手机也好用"


def _open(lang="en", **qp):
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.query_params["lang"] = lang
    for k, v in qp.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, at.exception
    return at


def _charts(at) -> dict[str, dict]:
    """{chart key: spec} (keys mx_<figure id>)."""
    return {c.key: json.loads(c.proto.spec) for c in at.get("plotly_chart")}


def _z(spec) -> np.ndarray:
    return np.array([[np.nan if v is None else v for v in row] for row in spec["data"][0]["z"]], dtype=float)


@torch.no_grad()
def _model_attention(enc, text, layer, head):
    _, ids = mechanics.token_ids(enc, text)
    _, atts = enc.model(torch.tensor([ids]), need_weights=True)
    return atts[layer][0, head].numpy()


@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("model", ["bert", "gpt"])
def test_opens_with_the_models_own_numbers(model, lang):
    enc = shipped(model)
    at = _open(lang, model=model)
    assert [t.value for t in at.title] == [i18n.lookup("mechanics.title", lang)]
    assert not at.warning and not at.error
    charts = _charts(at)
    for key in (
        "mx_x",
        "mx_q",
        "mx_k",
        "mx_v",
        "mx_scores",
        "mx_masked",
        "mx_softmax",
        "mx_head_out",
        "mx_heads",
        "mx_attn_out",
        "mx_norms",
        "mx_ffn_hidden",
        "mx_layer0",
        "mx_sinusoidal",
    ):
        assert key in charts, key
    np.testing.assert_allclose(np.nan_to_num(_z(charts["mx_softmax"])), _model_attention(enc, TEXT, 0, 0), atol=1e-5)
    assert ("mx_rotary" in charts) == (model == "bert") and ("mx_learned" in charts) == (model == "gpt")
    assert ("mx_q_raw" in charts) == (model == "bert")
    scheme = "rope" if model == "bert" else "absolute"
    assert at.info[0].value == i18n.lookup(f"mechanics.scheme.{scheme}", lang, model=model.upper())
    masked = _z(charts["mx_masked"])
    upper = np.triu_indices(len(masked), 1)
    assert np.isnan(masked[upper]).all() == (model == "gpt") and not np.isnan(np.diag(masked)).any()
    steps = ("qkv", "scores", "mask", "softmax", "weighted", "concat", "ffn", "positions")
    assert [t.label for t in at.tabs] == [
        f"{i}. {i18n.lookup(f'mechanics.steps.{s}.tab', lang)}" for i, s in enumerate(steps, 1)
    ]
    if lang == "zh":  # titles, axis titles, ticks and legends in Chinese
        assert not _english(at), _english(at)


def test_switching_layer_and_head_changes_the_numbers():
    enc = shipped("bert")
    at = _open()
    first = _z(_charts(at)["mx_softmax"])
    at.selectbox(key="mx_layer").set_value(3).run()
    at.selectbox(key="mx_head").set_value(2).run()
    assert not at.exception
    charts = _charts(at)
    shown = _z(charts["mx_softmax"])
    assert np.abs(shown - first).max() > 0.05  # another head looks elsewhere
    np.testing.assert_allclose(shown, _model_attention(enc, TEXT, 2, 1), atol=1e-5)
    assert charts["mx_softmax"]["layout"]["title"]["text"].endswith("layer 3, head 2")
    t = mechanics.trace_block(enc, TEXT, 2, 1)
    np.testing.assert_allclose(_z(charts["mx_q"]), t.q, atol=1e-4)
    np.testing.assert_allclose(_z(charts["mx_ffn_hidden"]), t.ffn_hidden, atol=1e-4)
    assert at.query_params["layer"] in ("3", ["3"]) and at.query_params["head"] in ("2", ["2"])


def test_positions_step_measures_layer0():
    shipped("bert")
    at = _open()
    note = next(m.value for m in at.markdown if "Measured" in m.value)
    assert "**0.000000**" in note and "identical" in note
    z = _z(_charts(at)["mx_layer0"])
    assert z.shape[0] == 2 and np.array_equal(z[0], z[1])
    rot = _charts(at)["mx_rotary"]["data"]
    assert len(rot[0]["y"]) == 128 and rot[1]["y"][0] == rot[0]["y"][0]
    shipped("gpt")
    at = _open(model="gpt")
    note = next(m.value for m in at.markdown if "Measured" in m.value)
    assert "learned position vectors make them different" in note
    z = _z(_charts(at)["mx_layer0"])
    assert np.abs(z[0] - z[1]).max() > 0.1


def test_bad_input_gives_a_message_and_the_page_recovers():
    shipped("bert")
    at = _open()
    box = lambda: at.text_input(key="mx_text")  # the element of the latest run
    for bad, says in (
        ("", "Please type a sentence"),
        ("好" * 5000, "5000 characters long"),
        ("苹果\x1b[31m很好吃", "control characters"),
    ):
        box().input(bad).run()
        assert not at.exception and says in at.warning[0].value, bad
        assert not at.get("plotly_chart")
    box().input("<script>alert(1)</script>苹果").run()
    assert not at.exception and not at.warning
    charts = _charts(at)
    ticks = charts["mx_q"]["layout"]["yaxis"]["ticktext"]
    assert "&lt;" in ticks and "<" not in "".join(ticks)
    assert not any("<script" in m.value for m in at.markdown if m.proto.allow_html)
    box().input(TEXT).run()
    assert not at.warning and len(at.get("plotly_chart")) >= 16


def test_missing_model_names_the_command(monkeypatch, tmp_path):
    use_checkpoint_dir(monkeypatch, tmp_path)
    at = _open()
    assert "not available" in at.warning[0].value and not at.error
    assert "python -m ctxlib train bert" in teachers_text(at)

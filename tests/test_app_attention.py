"""AppTest for the BERT attention page: defaults, head view HTML, pair input, bad input, missing model."""

import base64
import json

import numpy as np
import pytest
from app_pages import run_page, shipped, teachers_text, use_checkpoint_dir

PAGE = "4_BERT_attention.py"
TITLE = "BERT attention: where each layer and head looks"


@pytest.fixture(scope="module")
def bert():
    return shipped("bert")


def _run(**qp):
    return run_page(PAGE, TITLE, timeout=90, **qp)


def _iframes(at):
    return [e.proto.srcdoc for e in at.get("iframe")]


def _unsafe_html(at):
    return [m.value for m in at.markdown if m.proto.allow_html] + [e.proto.body for e in at.get("html")]


def test_defaults_render_all_views(bert):
    at = _run()
    n_layers = bert.model.cfg.layers
    charts = at.get("plotly_chart")
    assert len(charts) >= 6  # model view, enlarged head, head-view heatmap, summary, word attention, drift
    spec = json.loads(charts[0].proto.spec)
    assert len(spec["data"][1]["customdata"]) == n_layers * bert.model.cfg.heads  # one clickable centre per head
    (hv,) = _iframes(at)
    assert hv.count('class="tk L"') == len("苹果手机很好用") + 2 and "[SEP]" in hv
    assert "http" not in hv  # nothing loaded from outside
    drift = json.loads(charts[-1].proto.spec)["data"][0]
    e = bert.encode(["苹果手机很好用"])[0]  # the word's drift, computed here from the model's own layers
    idx = [e.tokens.index("苹"), e.tokens.index("果")]
    v = e.layers[:, idx].astype(np.float64).mean(1)
    cos = v @ v[0] / np.linalg.norm(v, axis=1) / np.linalg.norm(v[0])
    assert drift["text"] == [f"{c:.2f}" for c in cos] and len(drift["text"]) == n_layers + 1
    assert len(set(drift["text"])) > 2  # the layers do move the word: the check is not of 1.00s
    assert not at.error and not at.warning


def test_hide_specials_and_sentence_pair(bert):
    at = _run(hide="1", b="它的电池也很耐用")
    (hv,) = _iframes(at)
    assert "[CLS]" not in hv and "[SEP]" not in hv
    assert "#1a5e9a" in hv  # sentence B's tokens get their own colour
    at = _run(b="它的电池也很耐用")
    assert _iframes(at)[0].count("[SEP]") == 4  # two [SEP], each on both sides


def test_selected_head_is_shareable_in_the_url(bert):
    at = _run(sel="1,2")
    big = json.loads(at.get("plotly_chart")[1].proto.spec)
    assert big["layout"]["title"]["text"] == "layer 1, head 2"
    np.testing.assert_allclose(
        _z(big["data"][0]), bert.encode(["苹果手机很好用"])[0].attentions[0, 1], atol=1e-3
    )  # the data too
    assert at.query_params["sel"] == ["1,2"] or at.query_params["sel"] == "1,2"
    n_layers, n_heads = bert.model.cfg.layers, bert.model.cfg.heads
    for sel, shown in (
        ("99,99", (n_layers, n_heads)),
        ("2,99", (2, n_heads)),
        ("x,<b>", (n_layers, 1)),
        ("0,0", (n_layers, 1)),
    ):
        at = _run(sel=sel)  # out of range: the last layer/head; not a selection: the default (last layer, head 1)
        big = json.loads(at.get("plotly_chart")[1].proto.spec)
        assert big["layout"]["title"]["text"] == "layer {}, head {}".format(*shown), sel
        assert at.query_params["sel"] in ("{},{}".format(*shown), ["{},{}".format(*shown)])
        assert (at.number_input(key=f"att_l_{shown}").value, at.number_input(key=f"att_h_{shown}").value) == shown


def test_bad_inputs_give_messages(bert):
    at = _run(text="")
    assert "Please type a sentence" in at.warning[0].value
    at = _run(text="<script>alert(1)</script>苹果很好吃")
    (hv,) = _iframes(at)
    assert "<script>alert" not in hv and "&lt;" in hv
    assert not any("<script" in h for h in _unsafe_html(at))
    at = _run(text="苹果手机很好用。" * 40)
    assert any("longer than the model's maximum length" in w.value for w in at.warning)
    at = _run(word="香蕉")
    assert any("not in sentence A" in i.value for i in at.info)


def test_missing_model_names_the_command(monkeypatch, tmp_path):
    use_checkpoint_dir(monkeypatch, tmp_path)
    at = _run()
    assert "not available" in at.warning[0].value and not at.error
    assert "python -m ctxlib train bert" in teachers_text(at)


# -- GPT (a left-to-right model) on the same page ------------------------------------------------------
GPT_TITLE = "GPT attention: each character looks only to its left"


def _z(trace) -> np.ndarray:
    """A heatmap's z from a chart spec (Plotly may send it as a typed array)."""
    z = trace["z"]
    if isinstance(z, dict):
        shape = tuple(int(s) for s in z["shape"].split(","))
        return np.frombuffer(base64.b64decode(z["bdata"]), dtype=z["dtype"]).reshape(shape)
    return np.array(z, dtype=float)


def _model_radio(at):
    return next(r for r in at.sidebar.radio if r.label == "Model")


def test_gpt_reads_left_to_right_with_fakes(monkeypatch):
    from app_fakes import install

    install(monkeypatch)
    at = run_page(PAGE, GPT_TITLE, timeout=90, model="gpt")
    assert _model_radio(at).options == ["BERT", "GPT"] and _model_radio(at).value == "gpt"
    intro = next(m.value for m in at.markdown if m.value not in teachers_text(at))  # under the teachers' expander
    assert "left to right" in intro and "both sides" not in intro.split("BERT")[0]
    assert [t.label for t in at.text_input] == ["Sentence", "Word to follow"]  # no sentence B for GPT
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    model_view, big, mean = specs[:3]
    for spec in (model_view, big, mean):
        assert [t.get("name") for t in spec["data"]].count("masked") == 2  # a grey layer and its hatching
    z = _z(big["data"][0])
    assert np.isnan(z[np.triu_indices(len(z), 1)]).all() and not np.isnan(np.diag(z)).any()
    grey = _z(big["data"][1])
    assert (grey[np.triu_indices(len(z), 1)] == 1).all() and np.isnan(grey[np.tril_indices(len(z))]).all()
    assert any("cannot look to the right" in c.value for c in at.caption)
    assert "[SEP]" not in _iframes(at)[0]
    metric = next(r for r in at.radio if r.label == "Metric")
    assert "next character" not in metric.options and "share on [SEP]" not in metric.options
    assert any("0 by construction" in c.value for c in at.caption)
    assert not at.error and not at.warning


def test_gpt_missing_is_named_with_its_command(monkeypatch, tmp_path, bert):
    from ctxlib import checkpoint

    (tmp_path / "bert").symlink_to(checkpoint.CHECKPOINT_DIR.resolve() / "bert")
    use_checkpoint_dir(monkeypatch, tmp_path)
    at = _run(model="gpt")  # asked for, but missing: BERT, and GPT named with its build command
    assert _model_radio(at).options == ["BERT"]
    assert "python -m ctxlib train gpt" in teachers_text(at)
    assert not at.error


@pytest.fixture(scope="module")
def tiny_gpt(tmp_path_factory):
    from test_app_gpt import tiny_gpt_dir

    return tiny_gpt_dir(tmp_path_factory)


def test_real_tiny_gpt_masked_cells_are_marked_masked(monkeypatch, tiny_gpt):
    use_checkpoint_dir(monkeypatch, tiny_gpt)  # GPT only: BERT missing, GPT chosen
    at = run_page(PAGE, GPT_TITLE, timeout=90, text="今天天气很好", hide="0")
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    big, mean = specs[1], specs[2]
    for spec in (big, mean):
        z, grey = _z(spec["data"][0]), _z(spec["data"][1])
        assert z.shape == (7, 7)  # [CLS] + 6 characters
        upper = np.triu_indices(7, 1)
        assert np.isnan(z[upper]).all(), "masked cells must not be drawn as 0-valued cells"
        assert (grey[upper] == 1).all() and spec["data"][1]["name"] == "masked"
        np.testing.assert_allclose(np.nansum(z, axis=1), 1.0, atol=1e-3)  # what is left is the learned attention
        assert spec["data"][1]["hovertemplate"].startswith("masked")
    mv = _z(specs[0]["data"][0])
    assert np.isnan(mv[0, 1]) and not np.isnan(mv[1, 0])  # the model view's tiles too
    assert "python -m ctxlib train bert" in teachers_text(at)


@pytest.fixture
def three_by_two(tiny_bert, tmp_path, monkeypatch):
    """A tiny BERT with 3 layers and 2 heads (counts that differ, so a swapped layer/head index shows) as the app's
    bert checkpoint."""
    import streamlit as st
    import torch

    from ctxlib import checkpoint
    from ctxlib.models.bert import BertConfig, BertModel

    torch.manual_seed(3)
    model = BertModel(BertConfig(vocab_size=len(tiny_bert.tokenizer), hidden=32, layers=3, heads=2, ffn=64, max_len=80))
    checkpoint.save(
        tmp_path / "bert",
        "bert",
        model.cfg.to_json(),
        tiny_bert.tokenizer.vocab.to_json(),
        model.state_dict(),
        {"steps": 1, "run": {"preset": "tiny", "seed": 0}},
        half=False,
    )
    use_checkpoint_dir(monkeypatch, tmp_path)
    st.cache_data.clear()
    import ctxlib

    return ctxlib.load("bert")


@pytest.mark.parametrize("sel", [(1, 2), (3, 1), (2, 2), (3, 2)])
def test_enlarged_head_shows_that_layer_and_heads_weights(three_by_two, sel):
    """The enlarged map's numbers are attention[layer - 1, head - 1] of the model's own output, for every corner of a
    3-layer, 2-head model; the model view lays out layers x heads."""
    at = _run(sel="{},{}".format(*sel), model="bert")
    att = three_by_two.encode(["苹果手机很好用"])[0].attentions  # (L, H, T, T)
    assert att.shape[:2] == (3, 2)
    big = json.loads(at.get("plotly_chart")[1].proto.spec)
    assert big["layout"]["title"]["text"] == "layer {}, head {}".format(*sel)
    z = _z(big["data"][0])
    np.testing.assert_allclose(z, att[sel[0] - 1, sel[1] - 1], atol=1e-4)
    others = [(j, h) for j in range(3) for h in range(2) if (j, h) != (sel[0] - 1, sel[1] - 1)]
    assert all(np.abs(z - att[j, h]).max() > 1e-3 for j, h in others)  # it is not some other head's map
    model_view = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert len(model_view["data"][1]["customdata"]) == 3 * 2

"""AppTest for the BERT attention page: defaults, head view HTML, pair input, bad input, missing model."""
import json

import pytest
from app_pages import run_page, shipped, use_checkpoint_dir

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
    assert len(drift["text"]) == n_layers + 1 and drift["text"][0] == "1.00"
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
    assert at.query_params["sel"] == ["1,2"] or at.query_params["sel"] == "1,2"
    at = _run(sel="99,99")  # out of range: clamped, no exception
    assert not at.exception


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
    assert any("python -m ctxlib train bert" in i.value for i in at.info)

"""AppTest for the BERT pre-training page: fill-mask, a live example, NSP, ELMo vs BERT, bad input."""
import pytest
from app_pages import chart_specs, run_page, shipped, use_checkpoint_dir

from ctxlib import checkpoint

PAGE = "5_BERT_pretraining.py"
TITLE = "BERT pre-training: masked LM and next-sentence prediction"


@pytest.fixture(scope="module")
def bert():
    return shipped("bert")


def _run(**qp):
    return run_page(PAGE, TITLE, timeout=120, **qp)


def test_defaults_render(bert):
    at = _run()
    assert at.code[0].value == "今天天气很[MASK]，我们去公园散步吧。"  # the default mask (URL mask=5)
    fm = chart_specs(at)[0]
    assert "(original: 好)" in fm["layout"]["annotations"][0]["text"]
    assert len(fm["data"][0]["y"]) == 5  # k = 5 candidates
    example = at.get("html")[0].proto.body
    assert "[CLS]" in example and "[SEP]" in example
    assert any("NSP label" in m.value for m in at.markdown)
    metrics = {m.label: m.value for m in at.metric}
    assert 0.0 <= float(metrics["P(IsNext | A, B)"]) <= 1.0
    if (checkpoint.CHECKPOINT_DIR / "elmo" / "config.json").is_file():
        assert len(at.get("plotly_chart")) == 3  # fill-mask, ELMo's two LMs, BERT at the same position
    assert not at.error


def test_example_seed_and_whole_word_masking(bert):
    a = _run(seed="3").get("html")[0].proto.body
    b = _run(seed="3").get("html")[0].proto.body
    c = _run(seed="4").get("html")[0].proto.body
    assert a == b and a != c
    at = _run(text="我们去公园散步吧", mask="4", ww="1")
    assert at.code[0].value == "我们去[MASK][MASK]散步吧"


def test_bad_inputs_give_messages(bert):
    at = _run(text="")
    assert "Please type a sentence" in at.warning[0].value
    at = _run(text="今天天气很好", mask="")
    assert any("There is no [MASK]" in i.value for i in at.info)
    at = _run(text="今天天气很[MASK]")
    assert at.code[0].value == "今天天气很[MASK]" and len(chart_specs(at)) >= 1
    at = _run(text="<script>alert(1)</script>天气很好", mask="13")
    assert "<script>alert(1)</script>" in at.code[0].value  # shown as text in a code block
    assert not any("<script" in m.value for m in at.markdown if m.proto.allow_html)
    at = _run(text="今天天气很好。" * 40, mask="2")
    assert any("longer than the model's maximum length" in w.value for w in at.warning)
    at = _run(a="", b="")
    assert any("type both sentences" in w.value for w in at.warning)


def test_missing_model_names_the_command(monkeypatch, tmp_path):
    use_checkpoint_dir(monkeypatch, tmp_path)
    at = _run()
    assert any("python -m ctxlib train bert" in i.value for i in at.info)
    assert at.warning and not at.error

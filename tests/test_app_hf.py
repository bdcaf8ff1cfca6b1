"""Every page with real-model registration: tiny Transformers models (built here from configs, random weights,
tokenizers trained on a few lines; no network) listed in CTXLAB_MODELS appear beside the shipped models in the
views their family takes, and no page raises."""

from pathlib import Path

import hf_tiny
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from ctxlib import registered

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted(p.name for p in (ROOT / "pages").glob("*.py"))


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf_app")
    return {
        "tiny-zh-bert": hf_tiny.zh_bert(root / "tiny-zh-bert", nsp=True),
        "tiny-gpt2": hf_tiny.gpt2(root / "tiny-gpt2"),
        "tiny-en-bert": hf_tiny.en_bert(root / "tiny-en-bert"),
    }


@pytest.fixture
def registered_env(tiny_models, monkeypatch, tmp_path):
    monkeypatch.setenv(registered.ENV, ",".join(f"hf:{p}" for p in tiny_models.values()))
    monkeypatch.setenv(registered.FILE_ENV, str(tmp_path / "none.toml"))
    monkeypatch.setenv(registered.EVALS_ENV, str(tmp_path / "evals"))
    st.cache_data.clear()
    return tiny_models


def _run(page: str, lang: str = "en", **qp) -> AppTest:
    at = AppTest.from_file(str(ROOT / ("app.py" if page == "app.py" else f"pages/{page}")), default_timeout=120)
    at.query_params["lang"] = lang
    for k, v in qp.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, at.exception
    return at


def test_registration_reads_the_environment_and_the_file(tmp_path, monkeypatch):
    f = tmp_path / "models.toml"
    f.write_text(
        '[[model]]\nsource = "hf:/data/bert-base-chinese"\nname = "bbc"\n[[model]]\nname = "no source"\n',
        encoding="utf-8",
    )
    monkeypatch.setenv(registered.ENV, "hf:/x/gpt2-chinese/, hf:/data/bert-base-chinese")
    monkeypatch.setenv(registered.FILE_ENV, str(f))
    assert [(e.name, e.source) for e in registered.extra_models()] == [
        ("gpt2-chinese", "hf:/x/gpt2-chinese/"),
        ("bert-base-chinese", "hf:/data/bert-base-chinese"),
    ]  # each source once
    assert registered.problems() == [f'{f}: model 2 has no source = "hf:PATH"; it is left out']
    f.write_text("[[model]\nbroken", encoding="utf-8")
    assert "could not be read" in registered.problems()[0]
    monkeypatch.setenv(registered.ENV, "hf:/a/bert,hf:/b/bert,hf:/c/gpt")  # names never clash with shipped kinds
    assert [e.name for e in registered.extra_models()] == ["bert-2", "bert-3", "gpt-2"]


@pytest.mark.parametrize("page", PAGES)
def test_every_page_opens_with_registered_models(registered_env, page):
    _run(page, "zh" if page.startswith(("1", "4", "6")) else "en")


def test_home_lists_them_with_family_and_source(registered_env):
    at = _run("app.py")
    rows = next(d.value for d in at.dataframe if "status" in d.value.columns)  # the models table
    record = next(d.value for d in at.dataframe if "source" in d.value.columns)  # in the teachers' expander
    assert {"tiny-zh-bert", "tiny-gpt2", "tiny-en-bert"} <= set(rows.iloc[:, 0])
    assert rows[rows.iloc[:, 0] == "tiny-zh-bert"].iloc[0]["family"] == "masked LM (reads both sides)"
    assert record[record.iloc[:, 0] == "tiny-zh-bert"].iloc[0]["source"] == str(registered_env["tiny-zh-bert"])


def test_a_broken_model_folder_shows_one_line_and_the_others_work(registered_env, tmp_path, monkeypatch):
    bad = tmp_path / "broken-model"
    bad.mkdir()
    (bad / "config.json").write_text("{not json", encoding="utf-8")
    monkeypatch.setenv(registered.ENV, f"hf:{bad},hf:{registered_env['tiny-zh-bert']}")
    at = _run("app.py")
    lines = [
        m.value.replace("\\", "")
        for e in at.expander
        if e.label == "For teachers"
        for m in e.markdown
        if "is corrupt" in m.value
    ]  # markdown-escaped, in the teachers' expander
    assert len(lines) == 1 and "\n" not in lines[0] and lines[0].startswith("broken-model:")
    assert "config.json is corrupt" in lines[0] and "save_pretrained" in lines[0]
    assert any("broken-model model is not available" in c.value.replace("\\", "") for c in at.caption)
    assert "tiny-zh-bert" in set(next(d.value for d in at.dataframe if "status" in d.value.columns).iloc[:, 0])


def test_attention_and_writing_offer_the_families_that_fit(registered_env):
    at = _run("4_BERT_attention.py")
    assert {"tiny-zh-bert", "tiny-gpt2", "tiny-en-bert"} <= set(at.sidebar.radio(key="att_model").options)
    at = _run("4_BERT_attention.py", model="tiny-gpt2")  # causal: no sentence B, the mask hatched
    assert not any("B" in t.label for t in at.text_input if t.key == "att_b")
    at = _run("6_GPT_writing.py", model="tiny-gpt2", prompt="the cat")
    assert at.sidebar.radio(key="gw_model").options == ["GPT", "tiny-gpt2"]  # masked LMs do not write left to right
    assert any("real pretrained model" in i.value for i in at.info)
    assert at.session_state["gw_model"] == "tiny-gpt2"


def test_fill_mask_shows_the_registered_masked_lm_beside(registered_env):
    at = _run("5_BERT_pretraining.py")
    headers = [m.value for m in at.markdown if "real pretrained model" in m.value]
    assert headers == ["**tiny-zh-bert** (a real pretrained model, registered by the teacher) on the same masks:"]


def test_type_vs_token_takes_every_model(registered_env):
    at = _run("1_Type_vs_token.py")
    assert {"tiny-zh-bert", "tiny-gpt2", "tiny-en-bert"} <= set(at.sidebar.multiselect[0].options)


def test_type_vs_token_uses_the_english_sets_for_an_english_model(registered_env):
    at = _run("1_Type_vs_token.py", models="tiny-en-bert")
    assert at.session_state["tt_word"] == "bank" and "river" in at.session_state["tt_text"]
    assert at.selectbox(key="tt_set").options[0] == "bank: riverside / money"
    at.sidebar.multiselect(key="tt_models").set_value(["bert", "tiny-en-bert"]).run()  # a Chinese model joins
    assert not at.exception and at.session_state["tt_word"] == "苹果"


def test_home_demo_in_english_runs_the_english_model_only(registered_env):
    at = _run("app.py", tl="en")
    assert at.radio(key="home_tl").value == "en" and at.text_input(key="home_word_w").value == "bank"
    fig = [c for c in at.get("plotly_chart")]
    assert fig and "tiny-en-bert" in fig[0].proto.spec and "elmo" not in fig[0].proto.spec
    at.radio(key="home_tl").set_value("zh").run()
    assert not at.exception and at.text_input(key="home_word_w").value == "苹果"


def test_the_app_without_registered_models_never_imports_transformers(tmp_path):
    """Cold start stays as it was: transformers loads only when an hf: model is used."""
    import os
    import subprocess
    import sys

    code = (
        "import sys\nfrom streamlit.testing.v1 import AppTest\nat = AppTest.from_file('app.py', default_timeout=120)\n"
        "at.run()\nassert not at.exception, at.exception\nprint('transformers' in sys.modules, 'ctxlib.models.hf' in sys.modules)"
    )
    env = {**os.environ, registered.ENV: "", registered.FILE_ENV: str(tmp_path / "none.toml"), "CTXLAB_NO_PREWARM": "1"}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[-2:] == ["False", "False"]


def test_the_english_lesson_runs_on_the_registered_english_model(registered_env):
    from ctxlib import lesson

    les = lesson.load("english")
    at = _run("0_Lesson.py", lesson="english")
    assert at.header[0].value == les.steps[0].text("title", "en")
    at.button(key="lesson_reveal_btn").click().run()
    assert not at.exception
    answer = " ".join(m.value for m in at.success if "clearly closer" in m.value)
    assert answer and "{closer}" not in answer and ("tiny-en-bert" in answer or "no model" in answer)
    chart = at.get("plotly_chart")[0].proto.spec
    assert "tiny-en-bert" in chart and "elmo" not in chart  # the English model's cosines, not the shipped ones
    assert not [w for w in at.warning if "English model" in w.value]


def test_the_english_lesson_without_an_english_model_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setenv(registered.ENV, "")
    monkeypatch.setenv(registered.FILE_ENV, str(tmp_path / "none.toml"))
    at = _run("0_Lesson.py", lesson="english")
    at.button(key="lesson_reveal_btn").click().run()
    assert not at.exception
    assert any("register one with CTXLAB_MODELS" in w.value for w in at.warning)

"""AppTest of the home demo's honesty notes (fake models): a target cut out of a longer jieba word is flagged under
its sentence with both segmentations; the summary names whole layers only, with ELMo's halves on a line of their
own; margins inside the noise band read "no clear answer"; the band is drawn; the notes sit in one expander."""

import json
import re
from pathlib import Path

import app_fakes
import pytest
from streamlit.testing.v1 import AppTest

from ctxlib import triple

APP = str(Path(__file__).resolve().parent.parent / "app.py")
CARVED = {"en": "jieba alone does not make '{w}' a word here", "zh": "jieba 单独分词时不会把“{w}”切成一个词"}
HOW = {"en": "How to read this chart", "zh": "怎么读这张图"}
UNCLEAR = {"en": "no clear answer", "zh": "没有明确答案"}


@pytest.fixture(autouse=True)
def _no_prewarm(monkeypatch):
    monkeypatch.setenv("CTXLAB_NO_PREWARM", "1")


def _run(lang, **params):
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update({"lang": lang, **params})
    at.run()
    assert not at.exception, at.exception
    return at


def _column_info(at, key):
    """The info boxes in the column of the text box `key`."""
    (col,) = [c for c in at.columns if any(t.key == key for t in c.text_input)]
    return " ".join(i.value for i in col.info).replace("\\", "")


def _verdicts(at):
    return [
        line
        for m in at.markdown
        for line in m.value.replace("\\", "").splitlines()
        if line.lstrip().startswith("- ") and any(f"- {k}" in line for k in ("word2vec", "elmo", "bert", "gpt"))
    ]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_default_triple_flags_sentence_c_and_reads_whole_layers(monkeypatch, lang):
    encs = app_fakes.install(monkeypatch)
    at = _run(lang)
    # the default C, 苹果公司发布了新手机: jieba alone keeps 苹果公司 whole; the word models read 苹果 cut out of it
    c = _column_info(at, "home_c_w")
    assert CARVED[lang].format(w="苹果") in c and "苹果公司 | 发布 | 了 | 新手机" in c and "【苹果】 | 公司 | 发布" in c
    assert "word2vec, elmo" in c  # the word models, not BERT or GPT (they read characters)
    assert not _column_info(at, "home_a_w") and not _column_info(at, "home_b_w")  # jieba makes 苹果 a word there
    # the summary: one line per contextual model, whole layers only; ELMo's halves indented below it
    lines = _verdicts(at)
    top = [x for x in lines if x.startswith("- ")]
    assert [x[2:].split(":")[0].split("：")[0] for x in top] == ["elmo", "bert", "gpt"]
    half = "half" if lang == "en" else "一半"
    assert all(half not in x for x in top)
    (halves,) = [x for x in lines if x.startswith("  - ")]
    assert halves.startswith("  - elmo") and half in halves
    # each line agrees with the library's verdict on the fakes' vectors and bands
    texts = [at.text_input(key=f"home_{k}_w").value for k in "abc"]
    for m, line in zip(("elmo", "bert", "gpt"), top):
        v = triple.verdict(
            triple.margins(encs[m].word_vectors(texts, "苹果"), encs[m].kind), triple.example_noise(encs[m])
        )
        assert f"{v.row.margin:+.3f}" in line and f"±{v.band:.3f}" in line
        assert (UNCLEAR[lang] in line) == (v.outcome == "unclear")
    # the band is drawn behind every row that has one (context-free rows have none), and labelled
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    rects = [s for s in spec["layout"]["shapes"] if s["type"] == "rect"]
    n_rows = sum(len(tr["y"]) for tr in spec["data"] if tr["type"] == "scatter" and tr.get("text"))
    assert 0 < len(rects) <= n_rows - 2  # word2vec's type vector and ELMo's char-CNN layer: band 0, not drawn
    assert all(r["x0"] == -r["x1"] and r["x1"] > 0 for r in rects)
    assert any(("noise" in a["text"]) or ("噪声" in a["text"]) for a in spec["layout"]["annotations"])


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_notes_under_the_chart_sit_in_one_expander(monkeypatch, lang):
    app_fakes.install(monkeypatch)
    at = _run(lang)
    (how,) = [x for x in at.expander if x.label == HOW[lang]]
    inside = " ".join(c.value for c in how.caption)
    assert ("held-out sense set" in inside) if lang == "en" else ("留出词义集" in inside)
    assert "GPT" in inside and "145" in inside  # GPT's rows, the band's example sets (12 words, 145 sentences)
    # outside it, the demo leaves one sentence visible: what to notice (every other note of the demo is inside)
    from ctxlib.app.i18n import catalogue

    demo_texts = [t for k, t in catalogue(lang).items() if k.startswith(("triple.", "home_demo."))]
    outside = [c.value for c in at.caption if all(c.value != d.value for d in how.caption)]
    demo = [x for x in outside if any(x.startswith(t[:12]) for t in demo_texts)]
    notice = catalogue(lang)["home_demo.notice"].format(share=triple.NOISE_Q)
    assert demo == [notice] and len(re.findall(r"[.。](?:\s|$)", notice)) == 1  # one sentence
    for k in ("triple.caption_w2v", "triple.caption_halves", "triple.caption_gpt"):
        assert catalogue(lang)[k] in inside


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_carved_out_sentence_is_flagged_and_a_whole_word_is_not(monkeypatch, lang):
    app_fakes.install(monkeypatch)
    at = _run(lang, word="手机", a="我买了新手机", b="他的手机没电了", c="手机游戏很好玩")
    a = _column_info(at, "home_a_w")
    assert CARVED[lang].format(w="手机") in a and "我 | 买 | 了 | 新手机" in a and "我 | 买 | 了 | 新 | 【手机】" in a
    assert "新手机" in a and not _column_info(at, "home_b_w")
    at.text_input(key="home_a_w").set_value("我的手机坏了").run()  # jieba: 我 | 的 | 手机 | 坏 | 了
    assert not at.exception and not _column_info(at, "home_a_w")


def test_no_carved_note_when_jieba_agrees_or_only_character_models_are_loaded(monkeypatch):
    app_fakes.install(monkeypatch)
    at = _run("en", c="他们发布了苹果手机")  # 苹果 | 手机: jieba makes 苹果 a word in all three
    assert not any("jieba alone" in i.value for i in at.info)
    app_fakes.install(monkeypatch, names=("bert", "gpt"))
    at = _run("en")  # the default C, but no word model reads it
    assert not any("jieba alone" in i.value for i in at.info)
    assert at.get("plotly_chart")

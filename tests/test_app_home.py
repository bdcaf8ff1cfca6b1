"""AppTest for the home page: lecture, live 苹果 demo (word2vec's cosine is exactly 1), models table, bad input."""

import json
from pathlib import Path

import app_fakes
import pytest
from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parent.parent / "app.py")


@pytest.fixture(autouse=True)
def _no_prewarm(monkeypatch):
    monkeypatch.setenv("CTXLAB_NO_PREWARM", "1")


def _run(lang="en"):
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["lang"] = lang
    at.run()
    assert not at.exception, at.exception
    return at


def _demo(at):
    """({model: [margin texts]}, {model: [held-out ranking texts]}, [row labels]) of the demo's chart."""
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    marks = {tr["name"]: tr["text"] for tr in spec["data"] if tr["type"] == "scatter" and tr.get("text")}
    ranks = {tr["name"]: tr["text"] for tr in spec["data"] if tr["type"] == "bar"}
    labels = [y for tr in spec["data"] if tr["type"] == "bar" for y in tr["y"]]
    return marks, ranks, labels


def _models_table(at):
    """The home page's models table (the training record table sits in the teachers' expander, above it)."""
    return next(d.value for d in at.dataframe if d.value.shape[1] == 5)


def _all_text(at):
    return " ".join(e.value for kind in ("warning", "info", "caption", "markdown") for e in getattr(at, kind)).replace(
        "\\", ""
    )


def test_home_renders_demo_and_models(monkeypatch):
    app_fakes.install(monkeypatch)
    at = _run()
    assert at.title[0].value == "ctxlab: contextual word embeddings"
    assert [at.text_input(key=f"home_{k}_w").value for k in ("word", "a", "b", "c")] == [
        "苹果",
        "我每天吃一个苹果",
        "这个苹果又甜又脆",
        "苹果公司发布了新手机",
    ]
    marks, ranks, labels = _demo(at)
    assert marks["word2vec"] == ["+0.000"] and ranks["word2vec"] == ["0.50"]  # one vector per type: a tie, always
    assert len(marks["elmo"]) == 3 + 2 * 2  # the token layer, then each biLSTM layer whole and as its two halves
    assert sum("forward half" in y for y in labels) == 2 and sum("backward half" in y for y in labels) == 2
    assert len(marks["bert"]) == 4 and len(marks["gpt"]) == 5
    assert all(0 <= float(r) <= 1 for rs in ranks.values() for r in rs)
    text = _all_text(at)
    assert "held-out sense set (10 words, 140 sentences" in text and "forward half and its backward half" in text
    assert "The word opens sentence C" in text  # the default C starts with 苹果
    table = _models_table(at)
    assert list(table.iloc[:, 0]) == ["word2vec", "elmo", "bert", "gpt"]
    assert list(table.iloc[:, 1]) == ["loaded"] * 4
    md = " ".join(m.value for m in at.markdown)
    assert "2L+1" in md and "[MASK]" in md and "class vs instance" in md
    assert "4. GPT (Radford et al., 2018)" in md and "Transformer decoder" in md and "left-to-right LM" in md
    assert "left to right" in " ".join(c.value for c in at.caption)  # the demo's caption explains GPT's rows
    assert len(at.get("page_link")) >= 2


def test_home_margin_matches_the_vectors(monkeypatch):
    """The chart's margins are cos(A,B) - cos(A,C) of the word's vectors, and the verdict names the best row, read
    against its noise band (the example sets' same-sense margins at that layer)."""
    from ctxlib import triple
    from ctxlib.vecmath import cosine

    encs = app_fakes.install(monkeypatch)
    at = _run()
    texts = [at.text_input(key=f"home_{k}_w").value for k in "abc"]
    V = encs["bert"].word_vectors(texts, "苹果")
    cos = [(cosine(V[0, j], V[1, j]), cosine(V[0, j], V[2, j])) for j in range(V.shape[1])]
    want = [ab - ac for ab, ac in cos]
    marks, _, _ = _demo(at)
    assert [float(x) for x in marks["bert"]] == pytest.approx(want, abs=6e-4)
    live = [j for j, (ab, ac) in enumerate(cos) if not (ab > triple.SAME and ac > triple.SAME)]  # context-free: out
    best = max(live, key=want.__getitem__)
    band = triple.example_noise(encs["bert"])[triple.View(best)]
    layer = ["embeddings", "layer 1", "layer 2", "layer 3"][best]
    verdict = [
        line for m in at.markdown for line in m.value.replace("\\", "").splitlines() if line.startswith("- bert")
    ]
    if abs(want[best]) <= band:
        assert verdict == [
            f"- bert: no clear answer: the largest margin among its layers, {want[best]:+.3f} at {layer}, "
            f"is inside the noise band (±{band:.3f})."
        ]
    elif want[best] > 0:
        assert verdict == [
            f"- bert: the largest margin among its layers is at {layer}: {want[best]:+.3f}, beyond the "
            f"noise band (±{band:.3f}): A is closer to B."
        ]
    else:
        assert verdict and "every layer puts A closer to C" in verdict[0]


def test_home_sentence_initial_case_is_explained(monkeypatch):
    app_fakes.install(monkeypatch)
    at = _run()
    at.text_input(key="home_a_w").set_value("苹果很好吃")
    at.text_input(key="home_b_w").set_value("苹果很甜").run()
    text = _all_text(at)
    assert "A and B are identical up to '苹果'" in text and "ELMo's forward half and GPT" in text
    marks, _, _ = _demo(at)
    assert len(marks["gpt"]) == 5  # GPT's rows are still drawn: their cos(A,B) is 1, the note says why


def test_home_url_with_three_sentences(monkeypatch):
    app_fakes.install(monkeypatch)
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update(
        {"lang": "zh", "word": "小米", "a": "我用小米熬粥", "b": "一碗小米粥", "c": "小米手机很便宜"}
    )
    at.run()
    assert not at.exception
    assert [at.text_input(key=f"home_{k}_w").value for k in ("word", "a", "b", "c")] == [
        "小米",
        "我用小米熬粥",
        "一碗小米粥",
        "小米手机很便宜",
    ]
    assert at.query_params["c"] in ("小米手机很便宜", ["小米手机很便宜"])
    assert "「小米」" in json.loads(at.get("plotly_chart")[0].proto.spec)["layout"]["title"]["text"]
    assert "不在词表里" in _all_text(at)  # 小米 is not in the fake word2vec's vocabulary


def test_home_in_chinese_and_missing_models(monkeypatch):
    app_fakes.install(monkeypatch, names=("word2vec",))
    at = _run("zh")
    assert at.title[0].value.startswith("ctxlab：")
    table = _models_table(at)
    assert list(table.iloc[1:, 1]) == ["未找到"] * 3  # the student's table names no command ...
    teachers = [e for e in at.expander if e.label == "给教师"]
    assert len(teachers) == 1  # ... the page's one teachers' expander holds it
    assert "python -m ctxlib train elmo" in " ".join(m.value for m in teachers[0].markdown)
    inside = {id(m.proto) for m in teachers[0].markdown}
    student = " ".join(
        e.value for k in ("warning", "info", "caption", "markdown") for e in getattr(at, k) if id(e.proto) not in inside
    )
    assert "python -m ctxlib" not in student and "checkpoints/" not in student


def test_home_without_gpt(monkeypatch):
    """No GPT checkpoint yet: the other three still work; GPT is listed calmly, with its build command."""
    app_fakes.install(monkeypatch, names=("word2vec", "elmo", "bert"))
    for lang in ("en", "zh"):
        at = _run(lang)
        marks, _, _ = _demo(at)
        assert list(marks) == ["word2vec", "elmo", "bert"]
        table = _models_table(at)
        assert list(table.iloc[:, 0]) == ["word2vec", "elmo", "bert", "gpt"]
        assert table.iloc[3, 1] != table.iloc[0, 1] and "python" not in str(table.iloc[3, 1])
        teachers = [e for e in at.expander if e.label == {"en": "For teachers", "zh": "给教师"}[lang]]
        assert len(teachers) == 1 and "python -m ctxlib train gpt" in " ".join(m.value for m in teachers[0].markdown)
        assert not at.error and not at.warning  # a model not built yet is no error of the teacher's
        assert "left to right" not in " ".join(c.value for c in at.caption)  # no caption about rows that are not there
        assert "GPT" in " ".join(m.value for m in at.markdown)  # the lecture still explains it


@pytest.mark.parametrize(
    "changes,needle",
    [
        ({"home_a_w": ""}, "Fill in the word and all three sentences"),
        ({"home_word_w": ""}, "Fill in the word and all three sentences"),
        ({"home_b_w": "香蕉很好吃"}, "Sentence B does not contain"),
        ({"home_b_w": "香蕉很好吃", "home_c_w": "梨"}, "Sentence B, C does not contain"),
        ({"home_b_w": "我每天吃一个苹果"}, "Sentences A=B are the same sentence"),
        ({"home_c_w": "我每天吃一个苹果"}, "Sentences A=C are the same sentence"),
        ({"home_word_w": "龘靐"}, "Sentence A, B, C does not contain"),
    ],
)
def test_home_bad_input(monkeypatch, changes, needle):
    app_fakes.install(monkeypatch)
    at = _run()
    for key, value in changes.items():
        at.text_input(key=key).set_value(value)
    at.run()
    assert not at.exception and not at.error
    assert needle in " ".join(w.value for w in at.warning).replace("\\", "")
    assert not at.get("plotly_chart")  # nothing to compare: no chart, the message says what to do


def test_home_unseen_word_flagged_per_model(monkeypatch):
    """元宇宙: word2vec has no vector (no row, no all-zero vector), the character models read it; 龘: [UNK] named."""
    app_fakes.install(monkeypatch)
    at = _run()
    at.text_input(key="home_word_w").set_value("元宇宙龘")
    for k, s in zip("abc", ("元宇宙龘很火", "大家都在谈元宇宙龘", "元宇宙龘公司上市了")):
        at.text_input(key=f"home_{k}_w").set_value(s)
    at.run()
    assert not at.exception
    marks, _, _ = _demo(at)
    assert "word2vec" not in marks and {"elmo", "bert", "gpt"} <= set(marks)
    warnings = " ".join(w.value for w in at.warning).replace("\\", "")
    assert "word2vec: '元宇宙龘' is not in the vocabulary" in warnings
    assert (
        "bert: reads characters and never saw 龘 in training" in warnings
        and "gpt: reads characters and never saw 龘 in training" in warnings
    )
    assert "elmo: '元宇宙龘' is built from its characters" in " ".join(i.value for i in at.info).replace("\\", "")


@pytest.mark.parametrize(
    "field,value,shown",
    [
        ("home_a_w", "苹果" + "很" * 4998, True),  # the box keeps 300 characters; the models get 120 around the word
        ("home_c_w", "很" * 4998 + "苹果", False),  # the box's 300 characters end before the word: it says so
        ("home_a_w", "苹果<script>alert(1)</script>", True),
    ],
)
def test_home_long_and_html_input(monkeypatch, field, value, shown):
    for names in (("gpt",), ("word2vec", "elmo", "bert", "gpt")):
        app_fakes.install(monkeypatch, names=names)
        at = _run()
        at.text_input(key=field).set_value(value).run()
        assert not at.exception and not at.error
        assert len(at.text_input(key=field).value) <= 300
        assert bool(at.get("plotly_chart")) == shown
        assert all("<script>" not in c.proto.spec for c in at.get("plotly_chart"))
        if not shown:
            assert "Sentence C does not contain" in " ".join(w.value for w in at.warning).replace("\\", "")
        elif len(value) > 300:
            assert "only the 120 characters around the word are used" in " ".join(i.value for i in at.info).replace(
                "\\", ""
            )


def test_home_link_with_5000_characters(monkeypatch):
    app_fakes.install(monkeypatch)
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update({"lang": "en", "a": "苹果" + "<script>" * 700, "c": "苹果" * 2500, "word": "苹果" * 20})
    at.run()
    assert not at.exception
    assert len(at.text_input(key="home_a_w").value) <= 300 and len(at.text_input(key="home_word_w").value) <= 12
    assert (
        at.text_input(key="home_c_w").value == "苹果公司发布了新手机"
    )  # too long for its box: the default, with a notice
    assert "is longer than 300 characters" in " ".join(c.value for c in at.caption).replace("\\", "")


def test_broken_and_missing_checkpoints_give_rebuild_commands(monkeypatch, tmp_path):
    """A corrupt config.json and a missing folder: the page names the file and the command, and does not crash."""
    from ctxlib import checkpoint
    from ctxlib.app import loaders

    (tmp_path / "bert").mkdir()
    (tmp_path / "bert" / "config.json").write_text("{not json", encoding="utf-8")
    monkeypatch.setattr(checkpoint, "CHECKPOINT_DIR", tmp_path)
    loaders.load_encoder.clear()
    try:
        at = _run()
        teachers = " ".join(m.value for e in at.expander if e.label == "For teachers" for m in e.markdown)
        assert "bert/config.json is corrupt" in teachers.replace("\\", "") and "python -m ctxlib train bert" in teachers
        assert "The bert model is not available" in " ".join(c.value for c in at.caption)
        table = _models_table(at)
        assert not any("python -m ctxlib train" in str(v) for v in table.iloc[:, 1])  # commands: the teachers' expander
        assert all(f"python -m ctxlib train {m}" in teachers for m in ("word2vec", "elmo", "gpt"))
        assert "No model is available yet" in " ".join(w.value for w in at.warning) and not at.get("plotly_chart")
    finally:
        loaders.load_encoder.clear()


def test_word2vec_margin_with_the_real_checkpoint(monkeypatch):
    """Issue #17: word2vec's zero margin, read with the shipped word2vec (not a fake that ignores context by
    construction): the demo's three vectors of 苹果 are the encoder's own, equal in every sentence, so the margin is
    cos(A, B) - cos(A, C) = 0 and the held-out ranking is a tie; the fake ELMo beside it shows a non-zero margin."""
    import numpy as np

    from ctxlib import checkpoint
    from ctxlib.app import loaders

    if not (checkpoint.CHECKPOINT_DIR / "word2vec" / "config.json").is_file():
        pytest.skip("checkpoints/word2vec missing: python -m ctxlib train word2vec")
    real = loaders.load_encoder("word2vec")
    encs = app_fakes.install(monkeypatch, names=("elmo",))
    monkeypatch.setattr(
        loaders,
        "load_encoder",
        lambda m: (
            real
            if m == "word2vec"
            else encs[m]
            if m == "elmo"
            else (_ for _ in ()).throw(checkpoint.CheckpointError(f"no {m}"))
        ),
    )
    at = _run()
    sents = ["我每天吃一个苹果", "这个苹果又甜又脆", "苹果公司发布了新手机"]
    vs = []
    for s in sents:  # the word's vector in each sentence, read off the encoder's tokens
        e = real.encode([s], target="苹果")[0]
        vs.append(e.layers[0, e.tokens.index("苹果")])
    cos = [float(vs[0] @ v / np.linalg.norm(vs[0]) / np.linalg.norm(v)) for v in vs[1:]]
    marks, ranks, _ = _demo(at)
    assert marks["word2vec"] == [f"{cos[0] - cos[1]:+.3f}"] == ["+0.000"] and ranks["word2vec"] == ["0.50"]
    assert float(marks["elmo"][-1]) != 0  # the same demo does show a margin where the vectors differ


def test_home_demo_heading_names_the_word_typed(monkeypatch):
    app_fakes.install(monkeypatch)
    at = _run()
    assert "is 苹果 closer" in at.header[0].value
    at.text_input(key="home_word_w").set_value("打")
    at.text_input(key="home_a_w").set_value("他在打电话")
    at.text_input(key="home_b_w").set_value("我给妈妈打了个电话")
    at.text_input(key="home_c_w").set_value("他们在打篮球").run()
    assert not at.exception and "is 打 closer" in at.header[0].value
    at.text_input(key="home_word_w").set_value("<b>*x*").run()
    assert not at.exception and "\\<b\\>\\*x\\*" in at.header[0].value  # HTML and markdown shown as typed
    at.text_input(key="home_word_w").set_value("  ").run()
    assert not at.exception and "is 苹果 closer" in at.header[0].value  # nothing typed: the default word


def test_home_says_when_a_model_was_sense_tuned_and_on_which_words(monkeypatch):
    encs = app_fakes.install(monkeypatch)
    encs["bert"].summary = {**encs["bert"].summary, "sense_tune": {"config": {"steps": 1500}, "words": 49}}
    text = _all_text(_run())
    assert "bert was sense-tuned after pre-training: 1500 more steps" in text and "49 words" in text
    assert "'苹果' is one of the words bert was sense-tuned on" in text  # 苹果 is a supplement word
    assert "道、深、跑、文件、刷" in text  # words to try instead: the frozen set's
    assert "elmo was sense-tuned" not in text
    at = AppTest.from_file(APP, default_timeout=60)  # 文件 (the frozen set's word) is not in the supplement
    at.query_params.update(
        {"lang": "zh", "word": "文件", "a": "他把文件交给了领导", "b": "这份文件需要盖章", "c": "我把电脑里的文件删了"}
    )
    at.run()
    assert not at.exception
    text = _all_text(at)
    assert "bert 在预训练之后还做了义项微调" in text and "做义项微调时用过的词" not in text


def test_home_no_sense_tune_note_for_a_pre_trained_model(monkeypatch):
    app_fakes.install(monkeypatch)
    assert "sense-tuned" not in _all_text(_run())

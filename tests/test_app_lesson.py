"""AppTest for the lesson page (the shipped lesson on the shipped models: every step, revealed) and for the
presentation toggle, which holds across pages and in the URL."""

import json
import re
from pathlib import Path

import app_fakes
import lesson_checks
import pytest
from app_pages import PAGES, chart_specs, shipped, teachers_text
from streamlit.testing.v1 import AppTest

from ctxlib import checkpoint, kinds, lesson, lesson_facts, triple
from ctxlib.app import i18n, lesson_views, loaders, present
from ctxlib.app.i18n import escape_md
from ctxlib.corpus import Paragraph

PAGE = str(PAGES / "0_Lesson.py")
APP = str(Path(__file__).resolve().parent.parent / "app.py")


@pytest.fixture(autouse=True)
def _no_prewarm(monkeypatch):
    monkeypatch.setenv("CTXLAB_NO_PREWARM", "1")


@pytest.fixture
def small_corpus(monkeypatch):
    """The 80/10/10 step draws from a few paragraphs instead of the corpora (loading them takes ~10 s)."""
    ps = [
        Paragraph("reviews", i, list(t))
        for i, t in enumerate(
            [
                "今天天气很好，我们去公园散步吧。路上的行人都很高兴。",
                "这家酒店的服务很好，房间也很干净。早餐种类很多。",
                "电脑的屏幕很清楚，电池也很耐用。就是有点重。",
                "经济发展很快，人民生活水平不断提高。城市变化很大。",
            ]
        )
    ]
    monkeypatch.setattr(lesson_views, "_paragraphs", lambda: ps)
    return ps


def _run(at=None, lang="en", **qp) -> AppTest:
    at = at or AppTest.from_file(PAGE, default_timeout=180)
    at.query_params.update({"lang": lang, **qp})
    at.run()
    assert not at.exception, at.exception
    return at


def _button(at, label_id: str):
    label = i18n.lookup(label_id, "en")
    return next(b for b in at.button if b.label == label)


def _answer(at) -> list[str]:
    return [s.value for s in at.success]


def _shown_before_reveal(at) -> str:
    """Everything a student reads before Reveal: title, question, inputs, captions, notes."""
    return "\n".join(x.value for part in (at.header, at.markdown, at.caption, at.code) for x in part)


def _secrets(step, data) -> list[str]:
    """The model outputs the answer names, less those that are the step's own inputs and small counts (a counter
    "step 3 of 14" is no leak)."""
    facts = lesson_facts.facts(step, data)
    out = []
    for name in lesson_facts.used(step.text("answer", "en")):
        v = facts.get(name, "")
        if v and v != lesson_facts.MISSING and not re.fullmatch(r"\d{1,3}", v):
            out.append(v)
    return out


def _strip_inputs(text: str, step) -> str:
    for v in step.params.values():
        for x in v if isinstance(v, list) else [v]:
            if isinstance(x, str):
                text = text.replace(x, "")
    return text


def test_walk_every_step_revealed(small_corpus):
    """Reveal, check the view and the answer against the model's own output, next: the whole shipped lesson on the
    shipped models (lesson_checks computes each step's figures itself, without ctxlib.lesson_compute)."""
    for m in kinds.names(shipped=True):
        shipped(m)
    les = lesson.load("default")
    assert set(lesson_checks.CHECKS) >= {f"{k}_step" for k in {s.kind for s in les.steps}}
    at = _run()
    for i, step in enumerate(les.steps, 1):
        assert at.query_params["step"] in (str(i), [str(i)])
        assert at.header[0].value == step.text("title", "en")
        assert not at.get("plotly_chart") and not at.metric and not at.table and not _answer(at)  # hidden
        before = _strip_inputs(_shown_before_reveal(at), step)
        _button(at, "lesson.reveal").click().run()
        assert not at.exception, (i, at.exception)
        oov = [e.value for e in at.error if e.value.startswith("OutOfVocabulary")]
        assert len(oov) == len(at.error) == (step.kind == "unseen_word"), (i, [e.value for e in at.error])
        assert not at.warning, (i, [w.value for w in at.warning])  # no model missing, no unknown word
        answer = _answer(at)[0]
        assert not lesson_facts.used(answer) and lesson_facts.MISSING not in answer.split(), (i, answer)
        data = lesson_views.compute(step)
        shipped_answer = lesson.answer(step, data, "en", escape=escape_md)
        if step.kind in lesson.LIVE_KINDS:  # no live run in this session: the shipped figures' answer, said so
            shipped_answer = i18n.lookup("lesson_live.label_shipped", "en") + " " + shipped_answer
        assert answer == i18n.lookup("lesson.answer", "en") + " " + shipped_answer
        zh = lesson.answer(step, data, "zh", {k: i18n.lookup(f"lesson.fact.{k}", "zh") for k in lesson_facts.WORDS})
        assert not lesson_facts.used(zh) and lesson_facts.MISSING not in zh, (i, zh)  # the Chinese answer filled too
        for secret in _secrets(step, data):  # nothing shown before Reveal gives the answer away
            assert secret not in before, (i, secret, before)
        check = lesson_checks.CHECKS[f"{step.kind}_step"]
        args = (step, at, answer, loaders.load_encoder, chart_specs(at))
        check(*args, small_corpus) if step.kind == "mlm_example" else check(*args)
        if step.kind == "cosine":
            tuned = [m for m in step.models() if "sense_tune" in checkpoint.read_config(m).get("summary", {})]
            said = any("sense-tuned after pre-training" in c.value for c in at.caption)
            assert said == bool(tuned and step.params["word"] in triple.supplement_words()), (i, tuned)
        if i < len(les.steps):
            _button(at, "lesson.next").click().run()
    assert _button(at, "lesson.next").disabled and at.query_params["step"] in (
        str(len(les.steps)),
        [str(len(les.steps))],
    )


def test_reveal_hides_again_on_another_step(monkeypatch):
    app_fakes.install(monkeypatch)
    at = _run(step="1")
    _button(at, "lesson.reveal").click().run()
    assert at.get("plotly_chart") and _answer(at)
    _button(at, "lesson.next").click().run()
    assert at.query_params["step"] in ("2", ["2"]) and not at.get("plotly_chart") and not _answer(at)
    _button(at, "lesson.prev").click().run()
    assert at.query_params["step"] in ("1", ["1"]) and not _answer(at)  # back: hidden again
    _button(at, "lesson.reveal").click().run()
    _button(at, "lesson.hide").click().run()
    assert not _answer(at)


@pytest.mark.parametrize("value", ["99", "0", "-1", "abc", "2.5", "３", ""])
def test_bad_step_in_the_link(monkeypatch, value):
    app_fakes.install(monkeypatch)
    at = _run(step=value)
    assert at.query_params["step"] in ("1", ["1"])
    assert at.header[0].value == lesson.load("default").steps[0].text("title", "en")
    if value:
        assert any("step=" in c.value for c in at.caption), [c.value for c in at.caption]


def test_step_from_the_link_and_chinese(monkeypatch):
    app_fakes.install(monkeypatch)
    at = _run(lang="zh", step="4")
    step = lesson.load("default").steps[3]
    assert at.header[0].value == step.text("title", "zh")
    assert f"第 4 / {len(lesson.load('default').steps)} 步" in next(
        m.value for m in at.markdown if m.value not in teachers_text(at)
    )


def test_unknown_lesson_name_falls_back_with_a_notice(monkeypatch):
    app_fakes.install(monkeypatch)
    at = _run(lesson="../secret")
    assert at.query_params["lesson"] in ("default", ["default"])
    assert any("lesson=" in c.value for c in at.caption)


@pytest.mark.parametrize(
    "content, code",
    [
        ('{"title": {"zh": "课", "en": "L"}, "steps": [', "bad_json"),
        (json.dumps({"title": {"zh": "课", "en": "L"}, "steps": [{"kind": "wordcloud"}]}), "unknown_kind"),
        (
            json.dumps(
                {
                    "title": {"zh": "课", "en": "L"},
                    "steps": [
                        {
                            "kind": "cosine",
                            "title": {"zh": "标题", "en": "T"},
                            "question": {"zh": "问", "en": "Q"},
                            "answer": {"zh": "答", "en": "A"},
                        }
                    ],
                }
            ),
            "missing",
        ),
    ],
)
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_malformed_lesson_gives_a_message_not_a_crash(monkeypatch, tmp_path, content, code, lang):
    app_fakes.install(monkeypatch)
    (tmp_path / "default.json").write_text(content, encoding="utf-8")
    monkeypatch.setattr(lesson, "LESSON_DIR", tmp_path)
    lesson_views._parse.clear()
    at = _run(lang=lang)
    with pytest.raises(lesson.LessonError) as e:
        lesson.parse(content.encode())
    assert [x.value for x in at.error] == [lesson_views_error(e.value, lang)]
    assert at.info and not at.button  # no step, no navigation


def lesson_views_error(e, lang) -> str:
    values = {k: i18n.lookup(f"lesson.type.{v}", lang) if k == "expected" else v for k, v in e.values.items()}
    if "reason_code" in values:
        values["reason"] = i18n.lookup(f"lesson.json.{values['reason_code']}", lang)
    text = i18n.lookup(f"lesson.error.{e.code}", lang, **values)
    return text if e.step is None else i18n.lookup("lesson.error.at_step", lang, n=e.step) + text


# -- presentation mode -----------------------------------------------------------------------------------------
BIG = 12 * present.SCALE  # Plotly's default 12 px font in presentation mode


def test_present_holds_across_pages_and_in_the_url(monkeypatch):
    app_fakes.install(monkeypatch)
    at = AppTest.from_file(APP, default_timeout=90)
    at.query_params.update({"lang": "en", "present": "1"})
    at.run()
    assert not at.exception, at.exception
    assert at.toggle(key="ctxlab_present_toggle").value is True
    assert any("font-size: 22px" in h.proto.body for h in at.get("html"))
    home_font = chart_specs(at)[0]["layout"]["font"]["size"]
    assert home_font == pytest.approx(BIG)  # Plotly's 12 x present.SCALE
    at.switch_page("pages/1_Type_vs_token.py").run()
    assert not at.exception, at.exception
    assert at.toggle(key="ctxlab_present_toggle").value is True and at.query_params["present"] in ("1", ["1"])
    assert all(s["layout"]["font"]["size"] >= BIG for s in chart_specs(at))
    at.toggle(key="ctxlab_present_toggle").set_value(False).run()
    assert "present" not in at.query_params
    assert not any("font-size: 22px" in h.proto.body for h in at.get("html"))
    assert all(s["layout"].get("font", {}).get("size", 12) < BIG for s in chart_specs(at))
    at.switch_page("pages/0_Lesson.py").run()
    assert at.toggle(key="ctxlab_present_toggle").value is False and "present" not in at.query_params


def test_present_off_by_default_and_in_the_lesson(monkeypatch):
    app_fakes.install(monkeypatch)
    at = _run()
    assert at.toggle(key="ctxlab_present_toggle").value is False and "present" not in at.query_params
    at = _run(present="1", step="1")
    _button(at, "lesson.reveal").click().run()
    assert chart_specs(at)[0]["layout"]["font"]["size"] == pytest.approx(BIG)


@pytest.mark.parametrize("text, hint", [("我今天很高[MASK]", True), ("我今天很高[MASK]。", False)])
def test_fill_mask_step_with_the_mask_last_gets_the_hint(text, hint):
    """A teacher's fill-mask step whose [MASK] ends the text: the students read why the model will guess 。 there."""

    def page(text):
        from ctxlib import lesson
        from ctxlib.app import lesson_views

        lesson_views.inputs(lesson.Step("fill_mask", {"en": "t"}, {"en": "q"}, {"en": "a"}, params={"text": text}))

    at = AppTest.from_function(page, args=(text,), default_timeout=60)
    at.query_params["lang"] = "en"
    at.run()
    assert not at.exception, at.exception
    want = i18n.lookup("pretraining.mask.at_end", "en")
    assert (want in [c.value for c in at.caption]) == hint, [c.value for c in at.caption]

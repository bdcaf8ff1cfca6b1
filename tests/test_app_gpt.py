"""AppTest for the GPT writing page (fakes, and a real tiny GPT for the prompt checks), and its plot builders."""

import json

import numpy as np
import pytest
from app_fakes import FakeGpt, install
from app_pages import chart_specs, run_page, teachers_text, use_checkpoint_dir

from ctxlib import corpus
from ctxlib.viz import generation as vg

PAGE = "6_GPT_writing.py"
TITLE = "GPT writing: one character at a time"


def tiny_gpt_dir(tmp_path_factory):
    """A checkpoint folder holding a GPT of the tiny preset (trained in seconds) under gpt/."""
    import torch

    from ctxlib.training import gpt

    ps = corpus.load("all", "train")
    pars = [ps[i] for i in sorted(np.random.default_rng(0).permutation(len(ps))[:300])]
    root = tmp_path_factory.mktemp("ckpts")
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        gpt.train(preset="tiny", device="cpu", out=root / "gpt", seed=0, paragraphs=pars)
    finally:
        torch.set_num_threads(n)
    return root


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return tiny_gpt_dir(tmp_path_factory)


def _run(**qp):
    return run_page(PAGE, TITLE, timeout=120, **qp)


def _htmls(at):
    return [h.proto.body for h in at.get("html")] + [m.value for m in at.markdown if m.proto.allow_html]


def test_writes_one_character_at_a_time(monkeypatch):
    install(monkeypatch)
    at = _run(prompt="今天天气", n="12", seed="3")
    anim, grid = chart_specs(at)
    assert len(anim["frames"]) == 12 and len(grid["layout"]["shapes"]) == 12  # one frame and one red box per step
    first = anim["frames"][0]
    assert "今" in first["layout"]["title"]["text"] and anim["layout"]["yaxis"]["ticktext"][:5] == [
        "#1",
        "#2",
        "#3",
        "#4",
        "#5",
    ]
    assert "#d62728" in first["data"][0]["marker"]["color"]  # the chosen character is red
    text = FakeGpt().generate("今天天气", max_new=12, seed=3)["generated"]
    assert all(c in _htmls(at)[0] for c in text)
    assert at.query_params["seed"] in ("3", ["3"])
    assert not at.warning and not at.error


def test_bad_prompts_give_translated_messages(monkeypatch):
    install(monkeypatch)
    at = _run(prompt="")
    assert at.warning[0].value == "Please type the beginning of a text for GPT to continue." and not at.get(
        "plotly_chart"
    )
    at = _run(prompt="<script>alert(1)</script>")
    assert not at.exception and all("<script" not in h for h in _htmls(at))
    assert all("<script" not in json.dumps(s) for s in chart_specs(at))
    at = _run(prompt="好" * 5000)
    assert not at.exception
    at = _run(prompt="今天", t="0")  # temperature 0 is not allowed: clamped to the slider's 0.1
    assert at.slider[0].value == pytest.approx(0.1) and not at.exception


def test_real_tiny_gpt_prompt_checks(monkeypatch, tiny_dir):
    use_checkpoint_dir(monkeypatch, tiny_dir)
    at = _run(prompt="今天天气", n="5")
    assert len(chart_specs(at)[0]["frames"]) == 5 and not at.warning
    at = _run(prompt="ᚠᚢᚦᚨ")
    assert "knows none of the characters" in at.warning[0].value
    at = _run(prompt="好" * 5000)
    assert at.warning[0].value.startswith("The prompt is 5000 characters long") and "at most 63" in at.warning[0].value
    at = _run(prompt="   ")
    assert "Please type the beginning" in at.warning[0].value


def test_missing_gpt_names_the_command(monkeypatch, tmp_path):
    use_checkpoint_dir(monkeypatch, tmp_path)
    at = _run()
    assert "not available" in at.warning[0].value and not at.error
    assert "python -m ctxlib train gpt" in teachers_text(at)


# -- the plot builders ----------------------------------------------------------------------------------
STEPS = [
    {
        "char": "好",
        "prob": 0.5,
        "sample_prob": 0.6,
        "candidates": [("好", 0.5), ("不", 0.2), ("<", 0.1), ("的", 0.05), ("了", 0.01)],
    },
    {
        "char": "&",
        "prob": 0.001,
        "sample_prob": 0.1,
        "candidates": [("。", 0.4), ("，", 0.3), ("的", 0.1), ("了", 0.05), ("是", 0.01)],
    },
]
LABELS = {"play": "play", "pause": "pause", "step": "step", "outside": "drawn", "probability": "p"}


def test_prompt_problem_and_parse_float():
    enc = FakeGpt()
    assert vg.prompt_problem(enc, "") == ("empty", 0) and vg.prompt_problem(enc, "  \n") == ("empty", 0)
    assert vg.prompt_problem(enc, "今天") is None
    enc.config["max_len"] = 4  # [CLS] + 3 characters
    assert vg.prompt_problem(enc, "今天天气") == ("too_long", 4) and vg.prompt_problem(enc, "今天天") is None
    assert vg.parse_float("0", 0.8, 0.1, 2.0) == 0.1 and vg.parse_float("x", 0.8, 0.1, 2.0) == 0.8
    assert vg.parse_float("nan", 0.8, 0.1, 2.0) == 0.8 and vg.parse_float("9", 0.8, 0.1, 2.0) == 2.0


def test_writing_figure_frames_escape_and_mark_the_chosen():
    fig = vg.writing_figure("<b>", STEPS, LABELS)
    assert len(fig.frames) == 2
    f0, f1 = fig.frames
    assert "&lt;b&gt;" in f0.layout.title.text and "<b>" not in f0.layout.title.text.replace("<b><span", "")
    assert list(f0.data[0].marker.color).count("#d62728") == 1 and "&lt;" in " ".join(f0.data[0].text)
    assert (
        list(f1.data[0].y) == [0, 1, 2, 3, 4, 5] and fig.layout.yaxis.ticktext[-1] == "drawn"
    )  # outside the top 5: own bar
    assert "&amp;" in f1.layout.title.text
    assert vg.writing_figure("x", [], LABELS).data == ()


def test_steps_figure_and_text_html():
    fig = vg.steps_figure(STEPS, "t")
    assert len(fig.layout.shapes) == 1 and fig.layout.shapes[0].x0 == -0.5  # step 2's character is not in its top 5
    assert list(fig.layout.yaxis.ticktext) == ["1 好", "2 &amp; *"]
    h = vg.text_html({"prompt": "<script>", "steps": STEPS})
    assert "<script>" not in h and "&lt;script&gt;" in h and 'title="好 50%' in h and "&amp;" in h

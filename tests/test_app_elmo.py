"""AppTest for the ELMo layers page: defaults, eval files present or missing, live mix as a queued job (result; cancel keeps the weights reached), bad input."""

import json
import threading
import time

import pytest
from app_pages import chart_specs, run_page, shipped, teachers_text, use_checkpoint_dir

from ctxlib import jobs
from ctxlib.evaluation import tasks

PAGE = "3_ELMo_layers.py"
TITLE = "ELMo: layers and task-specific mixing"


@pytest.fixture(scope="module")
def elmo():
    return shipped("elmo")


def _run(at=None, **qp):
    return run_page(PAGE, TITLE, at, timeout=120, **qp)


def test_defaults_render(elmo):
    at = _run()
    specs = chart_specs(at)
    words = [tr for tr in specs[0]["data"] if tr.get("mode") == "text"][0]["text"]
    assert "苹果" in words  # the target stays one token in the architecture drawing
    assert specs[1]["data"][1]["z"]["shape"] == "5, 5"  # the cosine matrix of the 2L+1 vectors
    lm = specs[2]
    assert len(lm["data"]) == 2  # forward and backward: top 10, and the real word's own bar when it is not among them
    for bars in lm["data"]:
        red = [y for y, c in zip(bars["y"], bars["marker"]["color"]) if c == "#d62728"]
        assert len(red) == 1 and red[0].startswith("苹果")
        assert len(bars["x"]) == (10 if red[0].strip() == "苹果" else 11)
    assert "python -m ctxlib eval elmo" not in " ".join(i.value for i in at.info)  # the shipped files are all there
    assert _mix_bars(specs) == {t: _file_weights(elmo.path, t) for t in ("pos", "ner", "sentiment")}
    assert not at.error


def _file_weights(path, task):
    import json

    return [float(x) for x in json.loads((path / f"eval_{task}.json").read_text(encoding="utf-8"))["mix_weights"]]


def _mix_bars(specs):
    """{task id: bar heights} of the mixing-weight chart (its legend names start with the task's English name)."""
    names = {"POS tags": "pos", "names (NER)": "ner", "sentiment": "sentiment"}  # ctxlib/app/strings/en/elmo.toml
    chart = [s for s in specs if s["layout"].get("yaxis", {}).get("title", {}).get("text") == "softmax(s)_j"]
    if not chart:
        return {}
    out = {}
    for tr in chart[0]["data"]:
        task = [t for n, t in names.items() if tr["name"].startswith(n)]
        y = tr["y"]
        if isinstance(y, dict):  # plotly 6: a base64 typed array
            import base64

            import numpy as np

            y = np.frombuffer(base64.b64decode(y["bdata"]), dtype=np.dtype(y["dtype"])).tolist()
        out[task[0]] = [float(v) for v in y]
    return out


def test_missing_eval_files_say_which_command(elmo, monkeypatch, tmp_path):
    """A checkpoint folder with eval_pos.json, a corrupt eval_ner.json and no eval_sentiment.json: the page names the
    two commands that rebuild what is missing, not pos's, and the mixing chart shows pos's weights only."""
    import shutil

    d = tmp_path / "elmo"
    d.mkdir()
    for f in ("config.json", "vocab.json", "model.pt"):
        (d / f).symlink_to(elmo.path / f)
    shutil.copy(elmo.path / "eval_pos.json", d / "eval_pos.json")
    (d / "eval_ner.json").write_text("{not json", encoding="utf-8")
    use_checkpoint_dir(monkeypatch, tmp_path)
    at = _run()
    infos = teachers_text(at)  # the commands: the teachers' expander
    assert "python -m ctxlib eval elmo --task ner" in infos and "python -m ctxlib eval elmo --task sentiment" in infos
    assert "--task pos" not in infos
    assert _mix_bars(chart_specs(at)) == {"pos": _file_weights(elmo.path, "pos")}
    assert not at.error
    for f in ("eval_pos.json", "eval_ner.json"):
        (d / f).unlink()
    at = _run()  # no eval file at all: three commands, no mixing chart
    infos = teachers_text(at)
    assert all(f"python -m ctxlib eval elmo --task {t}" in infos for t in ("pos", "ner", "sentiment"))
    assert _mix_bars(chart_specs(at)) == {}


@pytest.fixture
def no_job_left():
    yield
    running, waiting = jobs.line()
    for job in waiting + running:
        job.cancel()
        assert job.wait(60)


def test_live_mix_button_shows_history(elmo, monkeypatch, no_job_left):
    calls = []

    def fake_train(enc, task, l2, n_train, max_seconds, callback, **kw):
        calls.append((task, l2, max_seconds))
        for s in range(1, 4):
            callback(s, 3, [0.5, 0.3, 0.2])
        return {
            "mix_weights": [0.6, 0.3, 0.1],
            "gamma": 1.5,
            "score": 0.8,
            "history": [[1 / 3] * 3, [0.5, 0.3, 0.2], [0.6, 0.3, 0.1]],
        }

    monkeypatch.setattr(tasks, "train_mix_live", fake_train)
    at = _run()
    at.selectbox(key="elmo_live_task").set_value("ner")
    at.button(key="elmo_live_start").click()
    at.run()
    assert not at.exception, at.exception
    job = jobs.owned_by(at.session_state["elmo_live_owner"], "elmo_mix")[-1]  # the training ran as a job in the line
    assert job.wait(30) and job.state == jobs.DONE, job.error
    at.run()
    assert not at.exception, at.exception
    assert calls == [("ner", 0.0, 20)]
    hist = [s for s in chart_specs(at) if s["layout"].get("xaxis", {}).get("title", {}).get("text") == "step"]
    assert (
        hist
        and len(hist[0]["data"]) == 3
        and "(NER), λ = 0.0" in json.dumps(hist[0]["layout"]["title"], ensure_ascii=False)
    )
    assert any("γ = 1.500" in m.value for m in at.markdown)


def test_live_mix_cancel_keeps_the_weights_reached(elmo, monkeypatch, no_job_left):
    features = threading.Event()

    def slow_train(enc, task, l2, n_train, max_seconds, callback, features_callback, **kw):
        while not features.is_set():  # the features phase: progress, no points yet
            features_callback(100, 400)
            time.sleep(0.01)
        for s in range(1, 100_000):
            time.sleep(0.01)
            callback(s, 100_000, [0.5 + s / 1e6, 0.3, 0.2 - s / 1e6])

    monkeypatch.setattr(tasks, "train_mix_live", slow_train)
    at = _run()
    at.button(key="elmo_live_start").click()
    at.run()
    job = jobs.owned_by(at.session_state["elmo_live_owner"], "elmo_mix")[-1]
    t0 = time.time()
    while job.progress < 0.1:
        assert time.time() - t0 < 120
        time.sleep(0.02)
    at.run()
    assert not at.exception, at.exception
    assert "extracting ELMo features of 400 sentences" in at.get("progress")[0].proto.text and not job.points
    features.set()
    while len(job.points) < 3:
        assert time.time() - t0 < 120
        time.sleep(0.02)
    at.run()
    assert at.get("progress") and "training s_j and γ" in at.get("progress")[0].proto.text
    at.button(key="elmo_live_cancel").click()
    at.run()
    assert job.wait(10) and job.state == jobs.CANCELLED
    at.run()
    assert not at.exception, at.exception
    assert "Training cancelled after" in " ".join(i.value for i in at.info)
    step, w = job.partial["step"], job.partial["mix_weights"]
    assert step == len(job.points) >= 3
    assert f"at step {step}: s = [{w[0]:.3f}, {w[1]:.3f}, {w[2]:.3f}]" in " ".join(m.value for m in at.markdown)
    hist = [s for s in chart_specs(at) if s["layout"].get("xaxis", {}).get("title", {}).get("text") == "step"]
    assert hist and len(hist[0]["data"][0]["x"]) == step
    assert at.button(key="elmo_live_start").disabled is False


def test_bad_inputs_give_messages(elmo):
    at = _run(text="")
    assert "Please type a sentence" in at.warning[0].value
    at = _run(text="<script>alert(1)</script>苹果很好吃", word="苹果")
    words = [tr for tr in chart_specs(at)[0]["data"] if tr.get("mode") == "text"][0]["text"]
    assert not any("<script" in w for w in words)
    assert not any("<script" in m.value for m in at.markdown if m.proto.allow_html)
    at = _run(text="我买了苹果。" * 400, word="苹果")  # 2,400 characters
    assert any("first 2,000 characters" in w.value for w in at.warning)
    at = _run(word="香蕉")
    assert any("not in the sentence" in i.value for i in at.info)


def test_missing_model_names_the_command(monkeypatch, tmp_path):
    use_checkpoint_dir(monkeypatch, tmp_path)
    at = _run()
    assert at.warning and not at.error and "python -m ctxlib train elmo" in teachers_text(at)


def test_lm_bars_words_only_and_punctuation_share(elmo):
    """Issue #13.8: after 我昨天买了一台 the forward LM's top word was "，" (43%): words only by default, and a caption
    says how much probability punctuation took; switched off, the true distribution shows it again."""
    at = _run(text="我昨天买了一台电脑", word="电脑")
    lm = elmo.lm_topk("我昨天买了一台电脑", 5, k=20, target="电脑")
    fwd = chart_specs(at)[2]["data"][0]["y"]
    assert not any(y.strip() in ("，", ",", "。") for y in fwd)
    share = f"{lm['punct']['forward']:.0%}"
    assert any("Punctuation is hidden" in c.value and share in c.value for c in at.caption)
    at.toggle(key="elmo_lm_words").set_value(False).run()
    fwd = chart_specs(at)[2]["data"][0]["y"]
    top = [w for w, _ in lm["forward"] if w not in ("<unk>", "<S>", "</S>")][0]
    assert fwd[-1].strip() == top  # the largest bar, drawn last, is the model's own first choice
    assert any("Punctuation took" in c.value for c in at.caption)

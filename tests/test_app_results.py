"""AppTest for the Results page: its figures equal the eval files, its verdicts follow the stated rule, a missing
file names the command that writes it, and zh mode renders."""

import json

import pytest
from app_pages import PAGES, run_page, teachers_text
from streamlit.testing.v1 import AppTest

from ctxlib import checkpoint, results
from ctxlib.app import i18n

PAGE = "7_Results.py"
TITLE = "Results: the lecture's claims, measured on our models"


def _read(model, name):
    path = checkpoint.CHECKPOINT_DIR / model / name
    if not path.is_file():
        pytest.skip(f"{path} missing")
    return json.loads(path.read_text(encoding="utf-8"))


def _section(at, n: int) -> list[str]:
    """The markdown lines of claim n (1-based), from its heading to the next one."""
    lines = [m.value for m in at.markdown]
    start = next(i for i, v in enumerate(lines) if v.startswith(f"#### {n}. "))
    end = next((i for i, v in enumerate(lines) if i > start and v.startswith("#### ")), len(lines))
    return lines[start:end]


def test_figures_equal_the_eval_files():
    bert, elmo = _read("bert", "eval_sentiment.json"), _read("elmo", "eval_sentiment.json")
    pos, nsp = _read("elmo", "eval_pos.json"), _read("bert", "eval_nsp.json")
    valid = _read("bert", "config.json")["summary"]["valid"]
    at = run_page(PAGE, TITLE, timeout=60)
    assert not at.warning  # every file is shipped

    text = " ".join(_section(at, 5))  # BERT vs ELMo, sentiment: one measure, BERT against ELMo (not word2vec)
    for v in (bert["score"], elmo["score"], elmo["word2vec_score"]):
        assert f"{v:.3f}" in text
    lead = bert["score"] - elmo["score"]
    outcome = "win" if lead >= 0.01 - 1e-9 else "loss" if lead <= -0.01 + 1e-9 else "tie"
    want = i18n.lookup("results.verdict." + ("reproduced" if outcome == "win" else "not_reproduced"), "en")
    assert f"[{want}]**" in text

    text = " ".join(_section(at, 2))  # ELMo vs word2vec
    assert f"{pos['score']:.3f} vs {pos['word2vec_score']:.3f}" in text
    text = " ".join(_section(at, 6))
    assert f"MLM top-1 {valid['mlm_top1']:.3f}" in text and f"NSP accuracy {valid['nsp_acc']:.3f}" in text
    text = " ".join(_section(at, 7))
    for order in ("true", "swapped", "random"):
        assert f"{nsp['rows'][order]['mean_p']:.3f}" in text
    assert f"{nsp['order_share']:.0%}" in text

    # the comparisons table of claim 5 holds the same figures
    tables = [d.value for d in at.dataframe]
    assert len(tables) == 1 + 7  # the overview, one per claim
    overview = tables[0]
    assert overview.iloc[4, 1] == want
    bert_rows = tables[5]
    assert len(bert_rows) == 1
    assert bert_rows["paper's winner"][0] == f"BERT: {bert['score']:.4f}"
    assert bert_rows["other side"][0] == f"ELMo: {elmo['score']:.4f}"
    assert bert_rows["winner's figure read from"][0] == "checkpoints/bert/eval_sentiment.json#/score"
    assert bert_rows["other figure read from"][0] == "checkpoints/elmo/eval_sentiment.json#/score"
    assert bert_rows["outcome"][0] == i18n.lookup(f"results.outcome.{outcome}", "en")
    captions = teachers_text(at)  # where the figures come from: the teachers' expander
    assert "checkpoints/bert/eval_sentiment.json" in captions and "checkpoints/bert/eval_nsp.json" in captions


def test_a_missing_file_names_its_command(tmp_path, monkeypatch):
    src = checkpoint.CHECKPOINT_DIR
    (tmp_path / "elmo").mkdir()
    for name in ("eval_pos.json", "eval_sentiment.json"):
        if not (src / "elmo" / name).is_file():
            pytest.skip(f"checkpoints/elmo/{name} missing")
        (tmp_path / "elmo" / name).write_bytes((src / "elmo" / name).read_bytes())
    (tmp_path / "bert").mkdir()
    (tmp_path / "bert" / "eval_nsp.json").write_text("{broken", encoding="utf-8")
    monkeypatch.setattr(checkpoint, "CHECKPOINT_DIR", tmp_path)
    at = run_page(PAGE, TITLE, timeout=60)
    assert at.warning
    warnings = teachers_text(at)
    assert "python -m ctxlib eval bert --task nsp" in warnings and "python -m ctxlib eval elmo --task ner" in warnings
    assert "python -m ctxlib eval word2vec --task senses" in warnings
    lines = " ".join(_section(at, 7))
    assert "not measured" in lines
    text = " ".join(_section(at, 2))  # POS and sentiment still measured, NER is missing: the verdict says so
    assert "[not fully measured]**" in text and "of 3 measures win" in text and "1 not measured)" in text
    assert f"`{tmp_path.name}/elmo/eval_ner.json#/score`" in text


def test_chinese():
    _read("bert", "eval_nsp.json")
    at = AppTest.from_file(str(PAGES / PAGE), default_timeout=60)
    at.query_params["lang"] = "zh"
    at.run()
    assert not at.exception, at.exception
    assert at.title[0].value == "结果：讲义中的结论，在我们的模型上测一测"
    text = " ".join(m.value for m in at.markdown)
    assert "本应用测得" in text and "Measured here" not in text
    # every claim's verdict, in Chinese, in the order ctxlib.results computes them (whatever the checkpoints reach)
    shown = [m.value for m in at.markdown if m.value.startswith("**:")]
    verdicts = [c.verdict for c in results.claims()]
    assert len(shown) == len(verdicts) and verdicts
    for line, v in zip(shown, verdicts):
        label = i18n.lookup(f"results.verdict.{v}", "zh")
        assert f"[{label}]" in line, (line, v)

"""AppTest of the Results page's verdict rule: the shipped checkpoints' verdicts in English and Chinese, each
claim's table of which figure sits on which side, a constructed tie, and an outside model's folder."""

import json

import pytest
from app_pages import PAGES
from streamlit.testing.v1 import AppTest
from test_results_rules import BASE

from ctxlib import checkpoint, results
from ctxlib.app import i18n

PAGE = "7_Results.py"


def _run(lang: str) -> AppTest:
    at = AppTest.from_file(str(PAGES / PAGE), default_timeout=60)
    at.query_params["lang"] = lang
    at.run()
    assert not at.exception, at.exception
    return at


def _verdict_lines(at) -> list[str]:
    return [m.value for m in at.markdown if m.value.startswith("**:")]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_shipped_verdicts_in_both_languages(lang):
    if not (checkpoint.CHECKPOINT_DIR / "bert" / "eval_sentiment.json").is_file():
        pytest.skip("shipped eval files missing")
    at = _run(lang)
    claims = results.claims()
    lines = _verdict_lines(at)
    assert len(lines) == len(claims) == len(results.CLAIMS)
    for line, c in zip(lines, claims):
        assert f"[{i18n.lookup(f'results.verdict.{c.verdict}', lang)}]**" in line, (line, c.verdict)
        n = c.counts
        assert (
            i18n.lookup(
                "results.held",
                lang,
                win=n["win"],
                n=len(c.comparisons),
                tie=n["tie"],
                loss=n["loss"],
                missing=n["missing"],
            )
            in line
        )
    tables = [d.value for d in at.dataframe]
    assert len(tables) == 1 + len(claims)  # the overview, then one table of sides per claim
    for table, c in zip(tables[1:], claims):
        assert len(table) == len(c.comparisons)
        outcomes = [i18n.lookup(f"results.outcome.{x.outcome}", lang) for x in c.comparisons]
        assert list(table.iloc[:, -1]) == outcomes
    bert = tables[1 + results.CLAIMS.index("bert_vs_elmo")]  # BERT on the winner's side, ELMo on the other
    assert list(bert.iloc[0, [3, 5]]) == [
        "checkpoints/bert/eval_sentiment.json#/score",
        "checkpoints/elmo/eval_sentiment.json#/score",
    ]
    assert bert.iloc[0, 4].startswith("ELMo: ")


def _write(root):
    for (model, name), data in BASE.items():
        (root / model).mkdir(parents=True, exist_ok=True)
        (root / model / name).write_text(json.dumps(data), encoding="utf-8")


def test_a_tie_and_an_outside_model_on_the_page(tmp_path, monkeypatch):
    root = tmp_path / "checkpoints"
    _write(root)
    sent = dict(BASE[("bert", "eval_sentiment.json")], score=0.8199)  # 0.0099 ahead of ELMo's 0.81: a tie
    (root / "bert" / "eval_sentiment.json").write_text(json.dumps(sent), encoding="utf-8")
    outside = tmp_path / "bbc"
    outside.mkdir()
    (outside / "eval_sentiment.json").write_text(json.dumps({"task": "sentiment", "score": 0.9}), encoding="utf-8")
    monkeypatch.setattr(checkpoint, "CHECKPOINT_DIR", root)
    monkeypatch.setenv(results.EXTRA_ENV, f"bert-base-chinese={outside};elmo={outside}")
    at = _run("en")
    lines = _verdict_lines(at)
    assert "[not reproduced]**" in lines[4] and "0 of 1 measures win (1 tie" in lines[4]
    assert all("[reproduced]**" in line for i, line in enumerate(lines) if i != 4)
    md = " ".join(m.value for m in at.markdown)
    assert "BERT's lead over ELMo is +0.0099:" in md
    assert "a win needs +0.010 or more" in md
    assert "bert-base-chinese" in " ".join(i.value for i in at.info)  # named as an outside model at the top
    assert any(f"`elmo={outside}`" in w.value for w in at.warning)  # a shipped name is refused, with a message
    tables = [d.value for d in at.dataframe]
    assert len(tables) == 1 + 7 + 2  # outside rows beside claims 2 (word2vec) and 5 (ELMo)
    bert_table, out = tables[6], tables[7]  # after the overview, claims 1-4 and claim 2's outside table
    assert bert_table.iloc[0, -1] == "= tie" and bert_table.iloc[0, 2] == "BERT: 0.8199"
    assert bert_table.iloc[0, 6] == "+0.0099"
    assert out.iloc[0, 2] == "bert-base-chinese (outside pretrained model): 0.9000" and out.iloc[0, 4] == "ELMo: 0.8100"
    assert out.iloc[0, -1] == "✓ win"
    w2v = tables[3]  # beside claim 2: the outside model against the same word2vec figure as ELMo's
    assert list(w2v.iloc[0, [1, 2, 4]]) == [
        "sentiment",
        "bert-base-chinese (outside pretrained model): 0.9000",
        "word2vec: 0.7800",
    ]

"""The NSP table (evaluation/nsp.py): held-out triples, the table's arithmetic, a tiny BERT, the eval file."""

import json

import numpy as np
import pytest
import torch

import ctxlib
from ctxlib import checkpoint, evaluation
from ctxlib.corpus import Paragraph
from ctxlib.evaluation import nsp
from ctxlib.models.bert import BertConfig, BertModel, CharTokenizer


def _par(source, i, sentences):
    return Paragraph(source, i, [w for s in sentences for w in (s[:-1], s[-1])], split="valid")


PARS = [
    _par("pd", 0, ["今天天气很好。", "我们去公园散步吧。", "公园里人很多。"]),
    _par("pd", 1, ["经济发展很快。", "工业产值增长了。"]),
    _par("pd", 2, ["短。", "只有一句话的段落没有下一句。"]),
    _par("reviews", 3, ["酒店房间很干净。", "早餐也不错。"]),
    _par("reviews", 4, ["电脑屏幕很清楚。", "电池不太耐用。"]),
]


def test_heldout_pairs_are_consecutive_and_random_b_is_from_another_paragraph_of_the_source():
    triples = nsp.heldout_pairs(PARS, n=10, seed=0)
    assert len(triples) == 4  # paragraph 2 has no two sentences of MIN_CHARS characters
    for t in triples:
        home = next(p for p in PARS if t["a"] in p.text)
        assert t["source"] == home.source
        assert t["a"] + t["b"] in home.text  # b follows a directly
        assert t["r"] not in home.text and any(t["r"] in p.text for p in PARS if p.source == home.source)
        assert min(len(t["a"]), len(t["b"]), len(t["r"])) >= nsp.MIN_CHARS
    assert nsp.heldout_pairs(PARS, n=10, seed=0) == triples  # deterministic
    assert len(nsp.heldout_pairs(PARS, n=2, seed=1)) == 2
    assert nsp.heldout_pairs(PARS, n=10, max_chars=8) == []  # no pair fits


class _Scripted:
    """next_sentence from a table: the table's arithmetic is checked against hand-computed figures."""

    name, kind = "scripted", "bert"

    def __init__(self, table):
        self.table = table

    def next_sentence(self, a, b):
        return self.table[(a, b)]


def test_table_arithmetic_and_order_share():
    triples = [
        {"a": "A1", "b": "B1", "r": "R1", "source": "pd"},
        {"a": "A2", "b": "B2", "r": "R2", "source": "reviews"},
    ]
    enc = _Scripted(
        {
            ("A1", "B1"): 0.9,
            ("B1", "A1"): 0.8,
            ("A1", "R1"): 0.2,
            ("A2", "B2"): 0.7,
            ("B2", "A2"): 0.9,
            ("A2", "R2"): 0.4,
        }
    )
    t = nsp.nsp_table(enc, triples)
    assert t["n"] == 2 and t["sources"] == {"pd": 1, "reviews": 1}
    assert t["rows"]["true"]["mean_p"] == pytest.approx(0.8)
    assert t["rows"]["swapped"]["mean_p"] == pytest.approx(0.85)
    assert t["rows"]["random"]["mean_p"] == pytest.approx(0.3)
    assert t["rows"]["random"]["share_is_next"] == 0.0 and t["rows"]["swapped"]["share_is_next"] == 1.0
    assert t["rows"]["swapped"]["share_below_true"] == 0.5  # 0.8 < 0.9, but 0.9 > 0.7
    assert t["order_share"] == pytest.approx((0.85 - 0.3) / (0.8 - 0.3))
    assert t["examples"][1]["p_swapped"] == 0.9
    order = _Scripted({**enc.table, ("B1", "A1"): 0.2, ("B2", "A2"): 0.4})  # a head that learned order
    assert nsp.nsp_table(order, triples)["order_share"] == pytest.approx(0.0)
    with pytest.raises(ValueError, match="no sentence pairs"):
        nsp.nsp_table(enc, [])


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory):
    """An untrained tiny BERT saved as a checkpoint (the table needs only a next-sentence head)."""
    torch.manual_seed(0)
    tok = CharTokenizer.build(PARS, min_count=1)
    model = BertModel(BertConfig(vocab_size=len(tok), hidden=32, layers=2, heads=4, ffn=64, max_len=64)).eval()
    out = tmp_path_factory.mktemp("bert") / "tiny"
    checkpoint.save(out, "bert", model.cfg.to_json(), tok.vocab.to_json(), model.state_dict(), {"steps": 0}, half=False)
    return out


def test_table_on_a_tiny_bert_matches_its_head(tiny_bert):
    enc = ctxlib.load(tiny_bert)
    triples = nsp.heldout_pairs(PARS, n=10, seed=0)
    t = nsp.nsp_table(enc, triples)
    want = np.mean([enc.next_sentence(x["b"], x["a"]) for x in triples])
    assert t["rows"]["swapped"]["mean_p"] == pytest.approx(want, abs=1e-4)
    for row in t["rows"].values():
        assert 0.0 <= row["mean_p"] <= 1.0


def test_eval_command_writes_the_file_and_refuses_other_models(tiny_bert, tmp_path, monkeypatch):
    monkeypatch.setattr("ctxlib.corpus.load", lambda source, split=None: PARS)
    res = evaluation.run_eval(tiny_bert, "nsp", out=tmp_path / "eval_nsp.json", n=3)
    on_disk = json.loads((tmp_path / "eval_nsp.json").read_text(encoding="utf-8"))
    assert on_disk["rows"] == res["rows"] and on_disk["n"] == 3 and on_disk["split"] == "valid"
    assert "--task nsp" in on_disk["command"]
    with pytest.raises(evaluation.TaskChoiceError, match="next-sentence head"):
        evaluation.run_eval("word2vec", "nsp")


def test_read_table_missing_or_corrupt(tmp_path):
    assert nsp.read_table(tmp_path) is None
    (tmp_path / "eval_nsp.json").write_text("{nope", encoding="utf-8")
    assert nsp.read_table(tmp_path) is None
    (tmp_path / "eval_nsp.json").write_text(json.dumps({"rows": {"true": {}}}), encoding="utf-8")
    assert nsp.read_table(tmp_path) is None  # rows missing
    rows = {o: {"mean_p": 0.5, "share_is_next": 0.5, "share_below_true": 0.5} for o in nsp.ORDERS}
    (tmp_path / "eval_nsp.json").write_text(json.dumps({"rows": rows}), encoding="utf-8")
    assert nsp.read_table(tmp_path)["rows"] == rows

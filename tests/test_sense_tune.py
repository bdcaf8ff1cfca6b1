"""Sense-tuning (ctxlib.training.sense_tune): the contrastive loss, the tune on a tiny BERT, and the command's errors."""

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from ctxlib import checkpoint, corpus
from ctxlib.analysis import pair_ranking
from ctxlib.cli import main
from ctxlib.training.sense_tune import SenseTuneConfig, sense_tune, supcon_loss, train_senses

# two words, two senses each, told apart only by the context: written for this test
_CTX = {
    ("苹果", "fruit"): ["我买了一斤红{}", "这个{}又甜又脆", "妈妈削了一个{}给我", "{}树上结满了果子", "她每天吃一个{}"],
    ("苹果", "brand"): ["{}公司发布了新手机", "我的{}电脑坏了", "他排队买{}手机", "{}的系统更新了", "这台{}笔记本很轻"],
    ("小米", "grain"): ["早上喝一碗{}粥", "地里的{}熟了", "{}和红枣一起煮", "农民收了很多{}", "{}粥很养胃"],
    ("小米", "brand"): ["{}手机卖得很好", "我用{}的充电器", "{}公司在北京", "他买了{}电视", "{}发布了新品"],
}


def _rows():
    return [
        SimpleNamespace(sentence=t.format(w), word=w, sense=s, split="train") for (w, s), ts in _CTX.items() for t in ts
    ]


def test_supcon_loss_is_lower_when_same_labels_cluster():
    torch.manual_seed(0)
    y = torch.tensor([0, 0, 0, 1, 1, 1])
    centers = torch.randn(2, 16)
    clustered = centers[y] + 0.05 * torch.randn(6, 16)
    mixed = centers[torch.tensor([0, 1, 0, 1, 0, 1])] + 0.05 * torch.randn(6, 16)
    assert supcon_loss(clustered, y, 0.1) < supcon_loss(mixed, y, 0.1)
    assert supcon_loss(clustered, y, 0.1) >= 0


def test_train_senses_keeps_train_split_words_with_two_senses():
    rows = _rows() + [
        SimpleNamespace(sentence="held out 苹果", word="苹果", sense="fruit", split="valid"),
        SimpleNamespace(sentence="一个意思", word="意思", sense="meaning", split="train"),
    ]
    d = train_senses(rows)
    assert sorted(d) == ["小米", "苹果"]  # 意思 has one sense here
    assert "held out 苹果" not in d["苹果"]["fruit"] and len(d["苹果"]["fruit"]) == 5


def _vectors(enc, word):
    texts = [r.sentence for r in _rows() if r.word == word]
    return enc.word_vectors(texts, word)[:, -1], [r.sense for r in _rows() if r.word == word]


def test_sense_tune_separates_senses_and_records_itself(tiny_bert, tmp_path):
    from ctxlib.models.bert_encoder import BertEncoder

    src = tmp_path / "src"
    enc = tiny_bert
    checkpoint.save(
        src,
        "bert",
        enc.model.cfg.to_json(),
        enc.tokenizer.vocab.to_json(),
        enc.model.state_dict(),
        {"steps": 10, "run": {"preset": "tiny", "seed": 0}},
        half=False,
    )
    (src / "timeline.json").write_text("{}", encoding="utf-8")
    before = BertEncoder.from_checkpoint(src)
    pr0 = np.mean([pair_ranking(*_vectors(before, w)) for w in ("苹果", "小米")])
    cfg = SenseTuneConfig(steps=60, lr=2e-3, warmup=5, words=2, per_word=6, mlm_batch=4)
    out = sense_tune(src, tmp_path / "out", cfg, seed=0, rows=_rows(), paragraphs=corpus.load("reviews", "train")[:200])
    after = BertEncoder.from_checkpoint(out)
    pr1 = np.mean([pair_ranking(*_vectors(after, w)) for w in ("苹果", "小米")])
    assert pr1 > max(pr0, 0.8), (pr0, pr1)  # the trained words' senses now rank apart
    st = after.summary["sense_tune"]
    assert st["words"] == 2 and st["sentences"] == 20 and st["config"]["steps"] == 60 and st["seed"] == 0
    assert after.summary["steps"] == 10  # the pre-training record is kept
    assert (out / "timeline.json").is_file()
    assert "sense_tune" not in checkpoint.read_config(src)["summary"]  # the source is left as it was
    with pytest.raises(ValueError, match="already sense-tuned"):
        sense_tune(out, tmp_path / "again", cfg, rows=_rows(), paragraphs=corpus.load("reviews", "train")[:200])


def test_sense_tune_is_deterministic(tiny_bert, tmp_path):
    src = tmp_path / "src"
    enc = tiny_bert
    checkpoint.save(
        src,
        "bert",
        enc.model.cfg.to_json(),
        enc.tokenizer.vocab.to_json(),
        enc.model.state_dict(),
        {"steps": 10},
        half=False,
    )
    cfg = SenseTuneConfig(steps=4, lr=1e-3, warmup=1, words=2, per_word=4, mlm_batch=4)
    pars = corpus.load("reviews", "train")[:100]
    outs = [sense_tune(src, tmp_path / f"o{i}", cfg, seed=3, rows=_rows(), paragraphs=pars) for i in range(2)]
    a, b = (checkpoint.load(o)[2] for o in outs)
    assert all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("case", ["w2v", "same_out", "missing", "steps", "corrupt", "out_file", "out_taken"])
def test_sense_tune_command_errors_exit_2_with_one_line(case, w2v_tiny, tmp_path, capsys):
    args = {
        "w2v": [str(w2v_tiny), "--out", str(tmp_path / "o")],
        "same_out": [str(checkpoint.CHECKPOINT_DIR / "bert"), "--out", str(checkpoint.CHECKPOINT_DIR / "bert")],
        "missing": [str(tmp_path / "nope"), "--out", str(tmp_path / "o")],
        "steps": [str(w2v_tiny), "--out", str(tmp_path / "o"), "--steps", "0"],
        "corrupt": [str(tmp_path / "bad"), "--out", str(tmp_path / "o")],
        "out_file": [str(checkpoint.CHECKPOINT_DIR / "elmo"), "--out", str(tmp_path / "o")],
        "out_taken": [str(checkpoint.CHECKPOINT_DIR / "elmo"), "--out", str(tmp_path / "o")],
    }[case]
    if case == "out_file":
        (tmp_path / "o").write_text("notes", encoding="utf-8")
    if case == "out_taken":
        (tmp_path / "o").mkdir()
        (tmp_path / "o" / "config.json").write_text("{}", encoding="utf-8")
    if case == "corrupt":
        (tmp_path / "bad").mkdir()
        (tmp_path / "bad" / "config.json").write_text("{not json", encoding="utf-8")
    assert main(["sense-tune", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err
    assert {
        "w2v": "sense-tune is for BERT and ELMo",
        "same_out": "another folder",
        "missing": "No checkpoint",
        "steps": "--steps",
        "corrupt": "corrupt",
        "out_file": "is a file",
        "out_taken": "already holds a checkpoint",
    }[case] in err
    if case == "out_file":
        assert (tmp_path / "o").read_text(encoding="utf-8") == "notes"
    elif case == "out_taken":
        assert (tmp_path / "o" / "config.json").read_text(encoding="utf-8") == "{}"
    else:
        assert not (tmp_path / "o").exists()


def test_sense_tune_elmo_separates_senses(elmo_tiny, tmp_path):
    from ctxlib.models.elmo import ElmoEncoder

    before = ElmoEncoder.from_checkpoint(elmo_tiny)
    pr0 = np.mean([pair_ranking(*_vectors(before, w)) for w in ("苹果", "小米")])
    # the tiny biLM's own loss would drown the contrastive signal under gradient clipping: the contrastive part alone
    cfg = SenseTuneConfig(steps=60, lr=1e-2, warmup=5, words=2, per_word=6, mlm_batch=4, mlm_weight=0.0)
    out = sense_tune(
        elmo_tiny, tmp_path / "out", cfg, seed=0, rows=_rows(), paragraphs=corpus.load("reviews", "train")[:200]
    )
    after = ElmoEncoder.from_checkpoint(out)
    pr1 = np.mean([pair_ranking(*_vectors(after, w)) for w in ("苹果", "小米")])
    assert pr1 > max(pr0, 0.8), (pr0, pr1)
    assert after.summary["sense_tune"]["words"] == 2 and after.kind == "elmo"
    lm = SenseTuneConfig(steps=2, lr=1e-3, warmup=1, words=2, per_word=4, mlm_batch=4)  # the biLM loss path runs
    assert sense_tune(
        elmo_tiny, tmp_path / "lm", lm, rows=_rows(), paragraphs=corpus.load("reviews", "train")[:50]
    ).is_dir()


def test_dev_split_words_are_fixed_supplement_words_outside_the_frozen_set(w2v_tiny, capsys):
    import sys

    sys.path.insert(0, str(checkpoint.CHECKPOINT_DIR.parent / "bench"))
    import sense_tune_dev

    from ctxlib.evaluation.heldout import sense_sets
    from ctxlib.supplement import train_senses

    words = sense_tune_dev.dev_words()
    assert words == sense_tune_dev.dev_words() and len(words) == 12
    assert set(words) <= set(train_senses()) and not set(words) & set(sense_sets("frozen"))
    assert sense_tune_dev.main([str(w2v_tiny), "--steps", "0"]) == 2  # not a BERT or ELMo: one line, exit 2
    assert "for BERT and ELMo" in capsys.readouterr().err
    assert sense_tune_dev.main([str(w2v_tiny), "--steps", "-1"]) == 2
    # --train-words: a fixed draw of the other words; the rest are left out of the tune beside the dev words
    rest = sorted(set(train_senses()) - set(words))
    assert sense_tune_dev.left_out(words, None) == []
    out9 = sense_tune_dev.left_out(words, 9)
    assert out9 == sense_tune_dev.left_out(words, 9) and len(out9) == len(rest) - 9 and set(out9) < set(rest)
    assert set(sense_tune_dev.left_out(words, 18)) < set(out9)  # nested: 18 words hold the 9
    for bad in (0, len(rest) + 1):
        with pytest.raises(ValueError, match="--train-words"):
            sense_tune_dev.left_out(words, bad)

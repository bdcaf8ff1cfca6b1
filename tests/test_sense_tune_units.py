"""Sense-tuning (ctxlib.training.sense_tune) piece by piece, on the small models of sense_tune_models.py: the loss on
a constructed batch against a loop written out, the draws, which positions the loss reads (the encoder's word_vectors
at the layers counted from the top), the LM batches. With test_sense_tune_record.py (the tune's saved record and its
refusals), the mutation scope's runner (bench/mutation.sh sense_tune); the tunes that learn are in test_sense_tune.py."""

import logging
import math
import random
import re
import time
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from sense_tune_models import PARS, bert, elmo, rows

from ctxlib import corpus
from ctxlib.training import bert_batches
from ctxlib.training import sense_tune as st
from ctxlib.training.bert import PRESETS


@pytest.fixture(scope="module")
def pars():
    return PARS


@pytest.fixture(scope="module")
def bert_src(tmp_path_factory, pars):
    return bert(tmp_path_factory.mktemp("b"), pars)


@pytest.fixture(scope="module")
def elmo_src(tmp_path_factory, pars):
    return elmo(tmp_path_factory.mktemp("e"), pars)


def test_supcon_loss_equals_the_loop_written_out():
    g = torch.Generator().manual_seed(0)
    z = torch.randn(6, 3, generator=g, dtype=torch.float64) * torch.tensor([[1.0], [3.0], [0.5], [2.0], [1.0], [7.0]])
    y = torch.tensor([0, 0, 1, 1, 1, 2])  # the last row has no positive: it adds 0 to the mean over the 6 rows
    tau = 0.5
    u = [v / v.norm() for v in z]
    total = 0.0
    for i in range(6):
        den = sum(math.exp(float(u[i] @ u[j]) / tau) for j in range(6) if j != i)
        pos = [j for j in range(6) if j != i and y[j] == y[i]]
        total += -sum(float(u[i] @ u[j]) / tau - math.log(den) for j in pos) / max(len(pos), 1)
    got = st.supcon_loss(z, y, tau)
    assert got.dtype == torch.float32 and got.shape == ()
    assert float(got) == pytest.approx(total / 6, rel=1e-5)


def test_config_and_its_trainer_settings():
    for bad in ({"steps": 0}, {"steps": -3}, {"lr": 0.0}, {"lr": -1e-3}):
        with pytest.raises(ValueError, match="steps and lr must be positive"):
            st.SenseTuneConfig(**bad)
    st.SenseTuneConfig(steps=1, lr=1e-9)  # the smallest are taken
    c = st.SenseTuneConfig(steps=40, lr=3e-4, warmup=7, weight_decay=0.2, clip=0.7).train_config()
    got = {k: getattr(c, k) for k in ("steps", "lr", "warmup", "min_lr_ratio", "weight_decay", "clip")}
    assert got == {"steps": 40, "lr": 3e-4, "warmup": 7, "min_lr_ratio": 0.0, "weight_decay": 0.2, "clip": 0.7}
    assert c.amp == "off" and c.log_every == 40 and c.progress is False


class _Side:
    """A stand-in side: an item is (sentence, word); vectors are given per sentence."""

    def __init__(self, vecs=None, skip=()):
        self.vecs, self.skip, self.asked = vecs or {}, skip, []

    def item(self, text, word):
        return None if text in self.skip else (text, word)

    def vectors(self, items, from_top):
        self.asked.append(tuple(from_top))
        return [torch.stack([self.vecs[t] * k for t, _ in items]) for k in from_top]


def test_draw_takes_the_senses_in_turn_and_skips_what_the_side_refuses():
    data = st.train_senses(rows())
    assert sorted(data) == ["小米", "苹果"]
    cfg = st.SenseTuneConfig(words=2, per_word=5)
    skip = {"我的苹果电脑坏了"}
    items, labels = st._draw(_Side(skip=skip), data, sorted(data), cfg, random.Random(0))
    for w in data:
        mine = [(it, lab) for it, lab in zip(items, labels) if lab[0] == w]
        senses = sorted(data[w])
        assert all(it[0] in data[w][senses[lab[1]]] and it[1] == w for it, lab in mine)
        assert all(it[0] not in skip for it, _ in mine)
        if w == "小米":  # nothing skipped: the senses in turn, in sorted order (brand, grain)
            assert [lab[1] for _, lab in mine] == [0, 1, 0, 1, 0] and senses == ["brand", "grain"]
    assert len(items) == len(labels) and {w for w, _ in labels} == set(data)
    # one word per step: the two words come up in the draws that random.sample makes
    one = st.SenseTuneConfig(words=1, per_word=2)
    rng, firsts = random.Random(1), set()
    gen = st._draws(_Side(), data, one, rng)
    for _ in range(12):
        its, labs = next(gen)
        assert len(its) == 2 and labs[0][0] == labs[1][0] and [k for _, k in labs] == [0, 1]
        firsts.add(labs[0][0])
    assert firsts == set(data)


def test_contrastive_averages_the_words_with_two_senses_over_the_layers():
    g = torch.Generator().manual_seed(1)
    texts = [f"s{i}" for i in range(7)]
    vecs = {t: torch.randn(4, generator=g) for t in texts}
    side = _Side(vecs)
    items = [(t, "w") for t in texts]
    labels = [("c", 0), ("a", 0), ("a", 1), ("a", 0), ("b", 1), ("b", 0), ("b", 1)]  # c: one sense, left out
    cfg = st.SenseTuneConfig(layers=(2, 1), tau=0.3)
    got = st._contrastive(side, items, labels, cfg)
    want = 0.0
    for group in ([1, 2, 3], [4, 5, 6]):
        z = torch.stack([vecs[texts[i]] for i in group])
        y = torch.tensor([labels[i][1] for i in group])
        want += sum(float(st.supcon_loss(z * k, y, 0.3)) for k in (2, 1))
    assert float(got) == pytest.approx(want / (3 * 2), rel=1e-5)
    assert side.asked == [(2, 1)]
    assert float(st._contrastive(_Side(), [], [], cfg)) == 0.0  # nothing drawn: no loss, no model call


def test_sense_loss_adds_the_weighted_lm_loss_and_keeps_the_history(monkeypatch, caplog):
    side = SimpleNamespace(lm_loss=lambda: torch.tensor(2.0))
    monkeypatch.setattr(st, "_contrastive", lambda s, items, labels, cfg: torch.tensor(0.5))
    seen = []
    sl = st.SenseLoss(side, st.SenseTuneConfig(steps=101, mlm_weight=0.25), lambda s, lv: seen.append((s, lv)))
    assert sl.ema_c is None and sl.history == [] and sl.last == (0.0, 0.0)
    loss, n = sl(([1, 2, 3], [("a", 0)] * 3))
    assert float(loss) == pytest.approx(0.5 + 0.25 * 2.0) and n == 3 and sl.last == (1.0, 0.5)
    off = st.SenseLoss(SimpleNamespace(lm_loss=None), st.SenseTuneConfig(mlm_weight=0.0))
    assert float(off(([1], [("a", 0)]))[0]) == 0.5  # weight 0: the LM loss is not computed
    caplog.set_level(logging.INFO, logger=st.log.name)
    sl.t0 = time.time() - 1000  # the line tells the seconds since the tune began
    sl.after_step(1, 3.0, {})
    assert sl.ema_c == 0.5 and sl.history == [(0, 0.5, 3.0)] and seen == [(0, 1.0)]
    (line,) = caplog.messages
    secs = re.fullmatch(r"sense-tune step 1/101 contrastive 0\.500 total 3\.000 \((\d+) s\)", line)
    assert secs and 1000 <= int(secs[1]) < 1100, line
    sl.last = (2.0, 1.5)
    for step in range(2, 102):
        sl.after_step(step, 1.23456, {})
    assert [h[0] for h in sl.history] == [0, 50, 100]  # steps counted from 0: every 50th and the last
    assert [m.split(" contrastive")[0] for m in caplog.messages] == [f"sense-tune step {s}/101" for s in (1, 51, 101)]
    assert sl.history[1] == (50, round(1.5 + (0.5 - 1.5) * 0.98**50, 4), 1.2346)
    assert seen[1:] == [(s, 2.0) for s in range(1, 101)]
    last = st.SenseLoss(side, st.SenseTuneConfig(steps=3))
    for step in (1, 2, 3):
        last.after_step(step, 1.0, {})
    assert [h[0] for h in last.history] == [0, 2]  # the last step is recorded


def test_bert_item_and_its_cap(bert_src, pars):
    side = st.SIDES["bert"](bert_src, st.SenseTuneConfig(mlm_batch=2, max_tokens=8), 0, pars)
    tok = side.tok
    ids, idx = side.item("我用苹果和苹果", "苹果")
    assert idx == [3, 4]  # the first occurrence, after [CLS]
    assert ids == [tok.cls_id] + [tok.token_id(c) for c in "我用苹果和苹果"] + [tok.sep_id]
    assert side.item("苹果很甜", "苹果")[1] == [1, 2]
    assert side.item("这个很甜", "苹果") is None
    assert side.item("一二三四五六七苹果", "苹果")[1] == [8]  # cut at 8 characters: the part inside
    assert side.item("一二三四五六七八苹果", "苹果") is None
    assert side.item("一二三四五六苹果", "苹果")[0][-1] == tok.sep_id
    assert side.cap == 8 and side.n_layers == 2 and not side.own_corpus
    wide = st.SIDES["bert"](bert_src, st.SenseTuneConfig(mlm_batch=2), 0, pars)
    assert wide.cap == 38  # max_len 40 less [CLS] and [SEP]


def test_elmo_item_keeps_the_word_whole(elmo_src, pars):
    side = st.SIDES["elmo"](elmo_src, st.SenseTuneConfig(mlm_batch=2, max_tokens=3), 0, pars)
    assert side.item("苹果很甜", "苹果") == (["苹果", "很甜"], 1)  # +1: <S> comes first
    assert side.item("我的苹果电脑", "苹果") == (["我", "的", "苹果"], 3)  # cut at 3 words, the word the last
    assert side.item("苹果配苹果", "苹果") == (["苹果", "配", "苹果"], 1)  # the first occurrence
    assert side.item("我的红苹果", "苹果") is None  # the word is the 4th: past the cap
    assert side.item("这个很甜", "苹果") is None
    assert side.cap == 3 and side.n_layers == 2 and not side.own_corpus and side.max_len == 50


def test_lm_batches_have_the_configured_size_and_follow_the_seed(bert_src, elmo_src, pars, monkeypatch):
    def no_corpus(*a):
        raise AssertionError("the given paragraphs replace the corpus")

    monkeypatch.setattr(corpus, "load", no_corpus)
    made = []
    real = bert_batches.PretrainBatches
    monkeypatch.setattr(bert_batches, "PretrainBatches", lambda *a, **kw: made.append(kw) or real(*a, **kw))
    sizes = {}
    for kind, src in (("bert", bert_src), ("elmo", elmo_src)):
        for seed in (0, 0, 5):
            side = st.SIDES[kind](src, st.SenseTuneConfig(mlm_batch=3), seed, pars)
            seen = []
            loss = side.model.loss
            monkeypatch.setattr(side.model, "loss", lambda b, loss=loss, seen=seen: (seen.append(b), loss(b))[1])
            v = float(side.lm_loss().detach())
            assert v > 0 and math.isfinite(v) and len(seen) == 1
            sizes.setdefault(kind, []).append((seed, _batch_key(seen[0]), v))
    # BERT's masks as its long pre-training made them (whole words half of the time), so the LM stays what it was
    assert [kw["whole_word"] for kw in made] == [PRESETS["long"].data["whole_word"]] * 3 == [0.5] * 3
    b = sizes["bert"]
    assert b[0][1][0] == 3 and b[0][1:] == b[1][1:] and b[0][1] != b[2][1]  # 3 pairs; same seed, same batch
    e = sizes["elmo"]
    assert e[0][1:] == e[1][1:] and e[0][1] != e[2][1]
    # ELMo: about mlm_batch * 50 = 150 words of sentences (~ the BERT batch's tokens), so several sentences
    assert e[0][1][0] > 1 and e[0][1][0] * e[0][1][1] <= 150 + 50


def _batch_key(b):
    x = b["ids"] if "ids" in b else b["idx"]  # BERT: (pairs, T) token ids; ELMo: (sentences, T) word indices
    return (x.shape[0], x.shape[1], int(x.sum()))


def _loss_vectors(kind, src, from_top, texts, pars):
    side = st.SIDES[kind](src, st.SenseTuneConfig(mlm_batch=2), 0, pars)
    side.model.eval()  # word_vectors runs the model in eval mode: no dropout on either side
    with torch.no_grad():
        return [z.numpy() for z in side.vectors([side.item(t, "苹果") for t in texts], from_top)]


# sentences of different lengths, so the batch is padded; written for this test
_TEXTS = ["我买了一斤红苹果", "苹果公司发布了新手机", "这个苹果又甜又脆，我很喜欢"]


@pytest.mark.parametrize("layers", [2, 3])
def test_bert_loss_vectors_are_the_word_vectors_at_the_layers(tmp_path, pars, layers):
    """For each layer counted from the top (1 = the last), the vector the loss pulls on is the one the app shows."""
    from ctxlib.models.bert_encoder import BertEncoder

    src = bert(tmp_path, pars, layers=layers)
    from_top = tuple(range(1, layers + 1))
    zs = _loss_vectors("bert", src, from_top, _TEXTS, pars)
    wv = BertEncoder.from_checkpoint(src).word_vectors(_TEXTS, "苹果")  # (n, layers + 1, D): embeddings first
    assert wv.shape[1] == layers + 1
    for k, z in zip(from_top, zs):
        np.testing.assert_allclose(z, wv[:, layers + 1 - k], atol=1e-5, err_msg=f"layer {k} from the top")
    assert not np.allclose(zs[0], zs[1], atol=1e-3)  # the layers differ, so a swapped index would fail


def test_elmo_loss_vectors_are_the_word_vectors_at_the_layers(elmo_src, pars):
    from ctxlib.models.elmo import ElmoEncoder

    enc = ElmoEncoder.from_checkpoint(elmo_src)
    assert enc.model.cfg.n_layers == 2
    zs = _loss_vectors("elmo", elmo_src, (1, 2), _TEXTS, pars)
    wv = enc.word_vectors(_TEXTS, "苹果")
    assert wv.shape[1] == 3
    for k, z in zip((1, 2), zs):
        np.testing.assert_allclose(z, wv[:, 3 - k], atol=1e-5, err_msg=f"layer {k} from the top")
    assert not np.allclose(zs[0], zs[1], atol=1e-3)


def test_default_layers_are_the_top_two():
    assert st.SenseTuneConfig().layers == (2, 1)

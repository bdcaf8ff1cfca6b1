"""ELMo: shapes, direction, learning, save/load, unseen words, the LM API."""

import math

import numpy as np
import pytest
import torch

import ctxlib
from ctxlib import checkpoint, corpus
from ctxlib.models import elmo
from ctxlib.training import elmo as elmo_training

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def enc(elmo_tiny):
    return ctxlib.load(elmo_tiny)


def test_config_validation():
    with pytest.raises(ValueError):
        elmo.ElmoConfig(dim=64, hidden=32)
    with pytest.raises(ValueError):
        elmo.ElmoConfig(softmax="sampled")
    with pytest.raises(ValueError):
        elmo.ElmoConfig(max_chars=3, filters=[[4, 8]])


def test_shapes_and_token_layer_duplicated(enc):
    assert enc.kind == "elmo"
    assert enc.layer_names == ["char-CNN token layer", "biLSTM layer 1", "biLSTM layer 2"]
    out = enc.encode(["苹果手机很好用", "我喜欢吃苹果。"])
    d = enc.model.cfg.dim
    for e in out:
        assert e.layers.shape == (3, len(e.tokens), 2 * d)
        assert e.layers.dtype == np.float32 and e.attentions is None
        np.testing.assert_array_equal(e.layers[0, :, :d], e.layers[0, :, d:])
        assert len(e.spans) == len(e.tokens) and len(e.known) == len(e.tokens)
    assert enc.word_vectors(["苹果手机很好用", "我喜欢吃苹果"], "苹果").shape == (2, 3, 2 * d)
    assert enc.encode([""])[0].layers.shape == (3, 0, 2 * d)


def _states(enc, words):
    b = enc.featurizer.batch([words])
    with torch.no_grad():
        _, f, bw = enc.model.states(b["uniq"], b["idx"], b["lengths"])
    return torch.cat(f, -1)[0].numpy(), torch.cat(bw, -1)[0].numpy()  # (T, L*D) each, position 0 = <S>


def test_direction(enc):
    a = ["我们", "今天", "去", "北京", "开会", "了"]
    later = a[:4] + ["上海"] + a[5:]  # change word 4 (position 5)
    f1, b1 = _states(enc, a)
    f2, b2 = _states(enc, later)
    np.testing.assert_allclose(f1[:5], f2[:5], atol=1e-6)  # forward states before the change: unchanged
    assert np.abs(b1[:5] - b2[:5]).max() > 1e-4  # backward states before it: changed
    earlier = ["你们"] + a[1:]  # change word 0 (position 1)
    f3, b3 = _states(enc, earlier)
    np.testing.assert_allclose(b1[2:], b3[2:], atol=1e-6)  # backward states after the change: unchanged
    assert np.abs(f1[2:] - f3[2:]).max() > 1e-4


def test_lm_loss_falls():
    torch.manual_seed(0)
    sents = [p.words[a:b] for p in corpus.load("pd", "train")[:40] for a, b in p.sentences()]
    sents = [s for s in sents if len(s) <= 30][:24]
    cfg = elmo.ElmoConfig(**elmo_training.PRESETS["tiny"].model)
    wv, cv = elmo_training.build_vocabs(sents, cfg, char_min_count=1)
    cfg.n_chars, cfg.vocab_size = len(cv), min(cfg.vocab_size, len(wv))
    cfg.cutoffs = [c for c in cfg.cutoffs if c < cfg.vocab_size]
    batch = elmo.Featurizer(wv, cv, cfg.max_chars, 3).batch(sents)
    model = elmo.ElmoLM(cfg)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    first = None
    for _ in range(30):
        loss, n = model.loss(batch)
        first = float(loss.detach()) if first is None else first
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert n > 0
    assert first > 5.5  # about ln(vocab) at the start
    assert float(model.loss(batch)[0].detach()) < first - 1.0


def test_save_load_round_trip(enc, elmo_tiny, tmp_path):
    texts = ["中国人民今天很高兴", "苹果手机很好用"]
    v1 = [e.layers for e in enc.encode(texts)]
    again = ctxlib.load(elmo_tiny)
    for a, e in zip(v1, again.encode(texts)):
        np.testing.assert_array_equal(a, e.layers)
    cfg, voc, sd = checkpoint.load(elmo_tiny)
    checkpoint.save(tmp_path / "copy", "elmo", cfg["config"], voc, sd, cfg["summary"])
    for a, e in zip(v1, ctxlib.load(tmp_path / "copy").encode(texts)):
        np.testing.assert_array_equal(a, e.layers)
    s = enc.summary
    assert math.isfinite(s["perplexity"]["forward"]) and math.isfinite(s["perplexity"]["backward"])
    assert s["speed_tokens_per_s"]["full_fp32"] > 0 and s["tokens_seen"] > 0


def test_unseen_word_gets_vectors(enc):
    word = "魑魅魍魉"
    assert enc.in_vocab(word) and not enc.known(word)
    e = enc.encode(["他说" + word + "来了"], target=word)[0]
    i = e.tokens.index(word)
    assert e.known[i] is False
    assert np.all(np.abs(e.layers[:, i, :]).sum(-1) > 0)
    assert enc.word_vectors(["他说" + word + "来了"], word).shape[1] == 3


def test_lm_topk(enc):
    r = enc.lm_topk("我们今天去北京开会", 2, k=5)
    assert r["tokens"][2] == r["tokens"][r["index"]]
    for side in ("forward", "backward"):
        probs = [p for _, p in r[side]]
        assert len(probs) == 5 and all(0 < p <= 1 for p in probs)
        assert probs == sorted(probs, reverse=True) and sum(probs) <= 1 + 1e-6
        assert 0 < r["actual"][side] <= 1
    h = torch.randn(3, enc.model.cfg.dim)
    with torch.no_grad():
        total = enc.model.log_probs(h).exp().sum(-1)
    np.testing.assert_allclose(total.numpy(), 1.0, rtol=1e-4)
    with pytest.raises(ValueError):
        enc.lm_topk("我们", 5)


def test_lm_topk_rank_counts_words_as_the_chart_lists_them(enc):
    """The lesson's answer said 北京 was first in the chart and "ranked 2" in the text: <unk> stood above it."""
    from ctxlib.viz.elmo import LM_SPECIALS

    for text, i in (("他昨天去北京开会了", 3), ("我们今天去北京开会", 2), ("他说魑魅魍魉来了", 1)):
        r = enc.lm_topk(text, i, k=40)
        for side in ("forward", "backward"):
            listed = [w for w, _ in r[side] if w not in LM_SPECIALS]
            rank, word = r["actual"]["rank"][side], r["actual"]["word"]
            if word in LM_SPECIALS:
                assert rank is None
            elif word in listed:
                assert rank == listed.index(word) + 1, (text, side, listed[:5], rank)
            else:
                assert rank > len(listed)


def _same_topk(x, y):
    return [w for w, _ in x] == [w for w, _ in y] and np.allclose([p for _, p in x], [p for _, p in y], atol=1e-6)


def test_lm_topk_each_direction_reads_only_its_side(enc):
    """The forward LM predicts token i from tokens < i only: changing token i and everything after it leaves its
    top-k unchanged; the backward LM predicts it from tokens > i only."""
    left, right = "我们今天", "北京开会"
    n_left = len(enc.lm_topk(left, 0, k=1)["tokens"])
    texts = [left + "去" + right, left + "吃了苹果和香蕉", "他们昨天没有去" + right, "谁" + right]
    toks = [enc.lm_topk(t, 0, k=1)["tokens"] for t in texts]
    assert toks[0][:n_left] == toks[1][:n_left] and toks[0][n_left] != toks[1][n_left]  # same prefix, new word i
    n_right = len(enc.lm_topk(right, 0, k=1)["tokens"])
    assert toks[0][-n_right:] == toks[2][-n_right:] == toks[3][-n_right:]  # same suffix
    fwd = [enc.lm_topk(t, n_left, k=8)["forward"] for t in texts[:2]]
    assert _same_topk(*fwd)
    bwd = [enc.lm_topk(t, len(tk) - n_right - 1, k=8)["backward"] for t, tk in zip(texts[2:], toks[2:])]
    assert toks[2][-n_right - 1] != toks[3][-n_right - 1]
    assert _same_topk(*bwd)
    # and each does read its side: another left context changes the forward prediction at the same word
    assert not _same_topk(
        enc.lm_topk(texts[0], n_left, k=8)["forward"], enc.lm_topk(texts[2], len(toks[2]) - n_right - 1, k=8)["forward"]
    )


def test_untrained_differs(enc):
    u = enc.untrained(seed=0)
    a = enc.encode(["我们今天去北京"])[0].layers
    b = u.encode(["我们今天去北京"])[0].layers
    assert a.shape == b.shape and not np.allclose(a, b)


def test_vectors_do_not_depend_on_the_rest_of_the_batch(enc):
    # the char-CNN max-pools over padded character positions: padding must not vary with the batch's longest word
    alone = enc.encode(["苹果真好吃"])[0].layers
    batched = enc.encode(["苹果真好吃", "中华人民共和国国务院总理会见了来访的各国客人"])[0].layers
    np.testing.assert_allclose(alone, batched, atol=1e-5)

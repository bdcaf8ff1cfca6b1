"""BERT: attention, bidirectionality, training, save/load, fill-mask, the Encoder interface."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import ctxlib
from ctxlib import checkpoint, corpus
from ctxlib.models.bert import BertConfig, BertModel, CharTokenizer
from ctxlib.models.bert_encoder import BertEncoder
from ctxlib.training.bert import PRESETS, build_model, train
from ctxlib.training.bert_data import Documents, collate, make_example


@pytest.fixture(scope="module")
def pars():
    ps = corpus.load("all", "train")
    rng = np.random.default_rng(0)
    return [ps[i] for i in sorted(rng.permutation(len(ps))[:300])]


@pytest.fixture(scope="module")
def trained(pars, tmp_path_factory):
    torch.set_num_threads(1)
    out = train(preset="tiny", device="cpu", out=tmp_path_factory.mktemp("bert") / "tiny", seed=0, paragraphs=pars)
    return out


@pytest.fixture(scope="module")
def enc(trained):
    return ctxlib.load(trained)


def test_config_validation():
    with pytest.raises(ValueError):
        BertConfig(vocab_size=100, hidden=30, heads=4)
    with pytest.raises(ValueError):
        BertConfig(vocab_size=3)
    with pytest.raises(ValueError):
        BertConfig(vocab_size=100, dropout=1.5)


def test_attention_rows_sum_to_one_and_pad_gets_none():
    torch.manual_seed(0)
    m = BertModel(BertConfig(vocab_size=50, hidden=32, layers=2, heads=4, ffn=64, max_len=16)).eval()
    ids = torch.tensor([[2, 7, 8, 9, 10, 3], [2, 11, 3, 0, 0, 0]])  # second row padded
    with torch.no_grad():
        layers, atts = m(ids, torch.zeros_like(ids), need_weights=True, all_layers=True)
    assert len(layers) == 3 and len(atts) == 2
    for a in atts:  # (B, H, T, T)
        assert a.shape == (2, 4, 6, 6)
        assert torch.allclose(a[0].sum(-1), torch.ones(4, 6), atol=1e-5)
        assert torch.allclose(a[1, :, :3].sum(-1), torch.ones(4, 3), atol=1e-5)
        assert float(a[1, :, :, 3:].abs().max()) == 0.0  # no query attends to [PAD]
    # the fused path (training) gives the same vectors as the explicit one (visualiser)
    fused, _ = m(ids, torch.zeros_like(ids), need_weights=False, all_layers=True)
    for x, y in zip(fused, layers):
        assert torch.allclose(x[0], y[0], atol=1e-5) and torch.allclose(x[1, :3], y[1, :3], atol=1e-5)


def test_packed_training_path_matches_padded():
    torch.manual_seed(0)
    m = BertModel(BertConfig(vocab_size=50, hidden=32, layers=2, heads=4, ffn=64, max_len=16)).eval()
    ids = torch.tensor([[2, 7, 8, 3, 10, 3], [2, 11, 3, 12, 3, 0]])
    seg = torch.tensor([[0, 0, 0, 0, 1, 1], [0, 0, 0, 1, 1, 0]])
    with torch.no_grad():
        (h,), _ = m(ids, seg)
        hp, rank = m.forward_packed(ids, seg)
    assert hp.shape == (11, 32)
    assert torch.allclose(hp, h.reshape(-1, 32)[ids.reshape(-1) != 0], atol=1e-5)
    batch = {
        "ids": ids,
        "segment_ids": seg,
        "mlm_pos": torch.tensor([1, 8]),
        "mlm_labels": torch.tensor([7, 12]),
        "nsp": torch.tensor([1, 0]),
    }
    with torch.no_grad():
        loss, n = m.loss(batch)
        ref = F.cross_entropy(m.mlm_logits(h.reshape(-1, 32)[[1, 8]]), batch["mlm_labels"]) + F.cross_entropy(
            m.nsp_logits(h[:, 0]), batch["nsp"]
        )
    assert n == 11 and abs(float(loss) - float(ref)) < 1e-5


def test_tiny_model_loss_falls(trained, pars):
    cfg, vocab, _ = checkpoint.load(trained)
    tok = CharTokenizer(ctxlib.models.bert.Vocab.from_json(vocab))
    docs = Documents(pars, tok)
    rng = np.random.default_rng(99)
    batch = collate([make_example(rng, tok, docs, max_len=64) for _ in range(64)])
    fresh = build_model(tok, PRESETS["tiny"].model, seed=0).eval()
    trained_model = ctxlib.load(trained).model
    with torch.no_grad():
        before = float(fresh.loss(batch)[0])
        after = float(trained_model.loss(batch)[0])
    assert after < before - 0.5, (before, after)
    summary = checkpoint.read_config(trained)["summary"]
    assert summary["steps"] == PRESETS["tiny"].steps and summary["tokens_seen"] > 0


def test_encode_shapes_specials_and_spans(enc):
    text = "苹果手机很好用"
    e = enc.encode([text, "今天天气很好。"])[0]
    L = enc.model.cfg.layers
    assert e.layer_names == ["embeddings"] + [f"layer {i}" for i in range(1, L + 1)]
    assert e.tokens[0] == "[CLS]" and e.tokens[-1] == "[SEP]" and e.tokens[1:-1] == list(text)
    assert e.spans[0] == (0, 0) and e.spans[-1] == (len(text), len(text))
    assert all(text[a:b] == t for t, (a, b) in zip(e.tokens[1:-1], e.spans[1:-1]))
    assert e.layers.shape == (L + 1, len(text) + 2, enc.dim) and e.layers.dtype == np.float32
    assert e.attentions.shape == (L, enc.model.cfg.heads, len(text) + 2, len(text) + 2)
    assert np.allclose(e.attentions.sum(-1), 1.0, atol=1e-4)
    assert not e.truncated
    assert e.token_indices(0, 2) == [1, 2]  # the zero-width [CLS]/[SEP] are never pooled
    v = enc.word_vectors(["苹果真好吃", "苹果手机很好用"], "苹果")
    assert v.shape == (2, L + 1, enc.dim)


def test_truncation_flag(enc):
    cap = enc.model.cfg.max_len - 2
    e = enc.encode(["好" * (cap + 5), "好" * cap])
    assert e[0].truncated and len(e[0].tokens) == cap + 2
    assert not e[1].truncated and len(e[1].tokens) == cap + 2


def test_bidirectional(enc):
    a, b = enc.encode(["苹果手机很好用", "苹果手机很难用"])
    assert np.allclose(a.layers[0, 1], b.layers[0, 1])  # embeddings: same character, same position
    for j in range(1, a.layers.shape[0]):
        assert not np.allclose(a.layers[j, 1], b.layers[j, 1], atol=1e-4)  # a LATER character changed 苹


def test_save_load_round_trip(enc, trained, tmp_path):
    cfg, vocab, sd = checkpoint.load(trained)
    checkpoint.save(tmp_path / "copy", "bert", cfg["config"], vocab, enc.model.state_dict(), cfg["summary"])
    enc2 = ctxlib.load(tmp_path / "copy")
    x, y = enc.encode(["我们去公园吧"])[0], enc2.encode(["我们去公园吧"])[0]
    assert np.array_equal(x.layers, y.layers) and np.array_equal(x.attentions, y.attentions)
    assert isinstance(enc2, BertEncoder) and enc2.layer_names == enc.layer_names


def test_fill_mask_distribution(enc):
    text = "今天[MASK]气很[MASK]。"
    out = enc.fill_mask(text, topk=5)
    assert len(out) == 2
    assert [o["char_offset"] for o in out] == [2, 10]
    assert [o["index"] for o in out] == [3, 6]  # [CLS] 今 天 [MASK] 气 很 [MASK]
    for o in out:
        probs = [p for _, p in o["candidates"]]
        assert len(probs) == 5 and probs == sorted(probs, reverse=True)
        assert not any(t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]") for t, _ in o["candidates"])
    # independently: the model's MLM logits at each [MASK], softmax over the vocabulary without the specials
    tk = enc.tokenizer
    ids = (
        [tk.cls_id]
        + [tk.token_id(c) for c in "今天"]
        + [tk.mask_id]
        + [tk.token_id(c) for c in "气很"]
        + [tk.mask_id]
        + [tk.token_id("。"), tk.sep_id]
    )
    x = torch.tensor([ids])
    with torch.no_grad():
        (h,), _ = enc.model(x, torch.zeros_like(x))
        logits = enc.model.mlm_logits(h[0, [3, 6]]).float()
    words = [t for t in tk.itos if t not in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")]
    keep = torch.tensor([tk.itos.index(t) for t in words])
    for o, row in zip(out, logits):
        p = row[keep].softmax(-1)
        v, j = p.topk(5)
        assert [t for t, _ in o["candidates"]] == [words[int(i)] for i in j]
        np.testing.assert_allclose([q for _, q in o["candidates"]], v.numpy(), atol=2e-6)
    with pytest.raises(ValueError):
        enc.fill_mask("no mask here")


def test_pair_and_next_sentence(enc):
    e = enc.encode_pair("今天天气很好。", "我们去公园吧。")
    seg = e.segment_ids
    assert e.tokens.count("[SEP]") == 2 and e.tokens[0] == "[CLS]"
    assert len(seg) == len(e.tokens) and seg[:9] == [0] * 9 and set(seg[9:]) == {1}
    assert e.attentions.shape[-1] == len(e.tokens)


def test_next_sentence_is_the_probability_of_isnext(enc):
    """next_sentence = softmax of the NSP head at [CLS], at the class the training data labels IsNext."""
    import copy

    # the IsNext class index, as the pre-training data code labels it
    ex = {"ids": np.array([2, 5, 3, 6, 3]), "segment_ids": np.array([0, 0, 0, 1, 1]), "masked": []}
    is_next = int(collate([{**ex, "is_next": True}])["nsp"][0])
    assert int(collate([{**ex, "is_next": False}])["nsp"][0]) == 1 - is_next
    # the tiny model's NSP head, biased towards IsNext so that P(IsNext) and P(NotNext) are far apart
    model = copy.deepcopy(enc.model)
    with torch.no_grad():
        model.nsp_head.bias[is_next] += 2.0
    biased = BertEncoder("bert-tiny-biased", {}, {}, None, model, enc.tokenizer)
    tk = enc.tokenizer
    for a, b in [("今天天气很好。", "我们去公园吧。"), ("我们去公园吧。", "今天天气很好。")]:
        ids = [tk.cls_id] + [tk.token_id(c) for c in a] + [tk.sep_id] + [tk.token_id(c) for c in b] + [tk.sep_id]
        seg = [0] * (len(a) + 2) + [1] * (len(b) + 1)
        with torch.no_grad():
            (h,), _ = model(torch.tensor([ids]), torch.tensor([seg]))
            pooled = torch.tanh(h[0, 0] @ model.pooler.weight.T + model.pooler.bias)
            logits = pooled @ model.nsp_head.weight.T + model.nsp_head.bias
        want = float(torch.softmax(logits, -1)[is_next])
        p = biased.next_sentence(a, b)
        assert p == pytest.approx(want, abs=1e-5) and p > 0.7, (p, want)


def test_run_eval_schema(trained, tmp_path):
    import json

    from ctxlib.evaluation.bert_sentiment import SentimentEval, run_eval

    out = tmp_path / "eval.json"
    rec = run_eval(
        str(trained), "sentiment", device="cpu", out=out, max_train=64, max_test=32, finetune_seeds=2, feature_seeds=2
    )
    assert isinstance(rec, SentimentEval) and len(rec.finetune_scores) == 2
    r = json.loads(out.read_text(encoding="utf-8"))  # the file as results.py and the pages read it
    assert {k: v for k, v in rec.to_json().items() if k != "seconds"} == {k: v for k, v in r.items() if k != "seconds"}
    assert out.is_file() and r["complete"]
    ft = r["finetune_score_per_seed"]
    assert len(ft) == 2 and r["finetune_score"] == pytest.approx(sum(ft) / 2, abs=1e-4)
    assert len(r["input_score_per_seed"]) == len(r["baseline_score_per_seed"]) == 2
    assert r["score"] == r[{"finetune": "finetune_score", "features": "input_score"}[r["score_from"]]]
    assert r["task"] == "sentiment" and r["metric"] == "accuracy" and r["n_train"] == 64 and r["n_test"] == 32
    assert 0.0 <= r["score"] <= 1.0 and len(r["per_layer_score"]) == len(r["layer_names"]) == 3
    assert len(r["mix_weights"]) == 3 and sum(r["mix_weights"]) == pytest.approx(1, abs=1e-3) and "word2vec_score" in r
    with pytest.raises(ValueError):
        run_eval(str(trained), "pos")


def test_type_matrix_pools_the_word_like_the_type_point(enc):
    # a vocabulary word's context-free vector = the word encoded alone, pooled over its own characters
    # ([CLS]/[SEP] left out), exactly the ★ type point of the Type vs token page
    words, m = enc.type_matrix(max_words=20)
    w = next(x for x in words if len(x) == 1)
    v = enc.word_vectors([w], w)[0]
    v = v / np.linalg.norm(v, axis=-1, keepdims=True)
    np.testing.assert_allclose(m[words.index(w)], v, atol=1e-5)


def test_mean_head_averages_the_real_characters_only(enc):
    from ctxlib.evaluation.finetune import _Classifier, batch_ids

    clf = _Classifier(enc.model, head="mean").eval()
    ids = batch_ids(enc.tokenizer, ["苹果很好吃", "手机"], enc.model.cfg.max_len)  # the second row is padded
    with torch.no_grad():
        got = clf(ids, torch.zeros_like(ids))
        (h,), _ = enc.model(ids, torch.zeros_like(ids))
        want = torch.stack([clf.head(h[0, 1:6].mean(0)), clf.head(h[1, 1:3].mean(0))])
    torch.testing.assert_close(got, want)
    with pytest.raises(ValueError):
        _Classifier(enc.model, head="max")

"""evaluation/finetune.py's recipe pieces, on the tiny untrained BERT (conftest.tiny_bert): truncation, the
encoder's dropout while fine-tuning, layer-wise learning rates, the heads, early stopping on a slice of the
training reviews, and the frozen features the feature-based recipe reads (long reviews in windows)."""

import numpy as np
import pytest
import torch
import torch.nn as nn

from ctxlib.evaluation import finetune as ft
from ctxlib.tokens import char_tokens

TEXTS = ["这家店的菜很好吃", "服务太差了，再也不来", "一般般吧", "物流很快，包装完好", "质量不行，退货了", "非常满意"]
LABELS = [1, 0, 0, 1, 0, 1]


def test_batch_ids_head_and_head_tail(tiny_bert):
    tok, L = tiny_bert.tokenizer, 12  # 10 tokens between [CLS] and [SEP]
    text = "一二三四五六七八九十百千万亿"  # 14 tokens
    e = tok.encode(text)
    head = ft.batch_ids(tok, [text], L, "head")[0].tolist()
    both = ft.batch_ids(tok, [text], L, "head_tail")[0].tolist()
    assert head == [tok.cls_id] + e[:10] + [tok.sep_id]
    assert both == [tok.cls_id] + e[:5] + e[-5:] + [tok.sep_id]
    short = ft.batch_ids(tok, ["好吃", text], L, "head_tail")
    assert short[0].tolist() == [tok.cls_id] + tok.encode("好吃") + [tok.sep_id] + [0] * 8  # padded with [PAD] = 0
    with pytest.raises(ValueError):
        ft.batch_ids(tok, [text], L, "tail")


def test_set_dropout_reaches_every_dropout_and_leaves_the_model_given(tiny_bert):
    import copy

    m = copy.deepcopy(tiny_bert.model)
    ft.set_dropout(m, 0.2, 0.05)
    drops = [x.p for x in m.modules() if isinstance(x, nn.Dropout)]
    assert drops and all(p == 0.2 for p in drops)
    assert all(x.p_attn == 0.05 for x in m.modules() if hasattr(x, "p_attn"))
    before = [x.p for x in tiny_bert.model.modules() if isinstance(x, nn.Dropout)]
    clf = ft.fine_tune(tiny_bert.model, tiny_bert.tokenizer, TEXTS, LABELS, epochs=1, batch=3, dropout=0.3)
    assert all(x.p == 0.3 for x in clf.bert.modules() if isinstance(x, nn.Dropout))
    assert [x.p for x in tiny_bert.model.modules() if isinstance(x, nn.Dropout)] == before  # the original unchanged


def test_layerwise_lr_decay_groups(tiny_bert):
    clf = ft._Classifier(tiny_bert.model, head="cls")
    groups = ft._param_groups(clf, 1e-3, 0.01, 0.5, decay_all=False)
    lr_of = {id(p): (g["lr"], g["weight_decay"]) for g in groups for p in g["params"]}
    L = tiny_bert.model.cfg.layers  # 2
    assert lr_of[id(clf.head.weight)] == (1e-3, 0.01)
    assert lr_of[id(clf.bert.pooler.weight)] == (1e-3, 0.01)
    assert lr_of[id(clf.bert.blocks[L - 1].mlp[0].weight)] == (pytest.approx(1e-3 * 0.5), 0.01)  # top block
    assert lr_of[id(clf.bert.blocks[0].mlp[0].weight)] == (pytest.approx(1e-3 * 0.5**L), 0.01)
    assert lr_of[id(clf.bert.tok_emb.weight)] == (pytest.approx(1e-3 * 0.5 ** (L + 1)), 0.01)
    assert lr_of[id(clf.bert.blocks[0].ln1.weight)][1] == 0.0 and lr_of[id(clf.head.bias)][1] == 0.0  # no decay
    assert sum(len(g["params"]) for g in groups) == sum(1 for p in clf.parameters() if p.requires_grad)
    assert all(g["weight_decay"] == 0.01 for g in ft._param_groups(clf, 1e-3, 0.01, 0.5))  # decay_all: every weight


def test_heads(tiny_bert):
    ids = ft.batch_ids(tiny_bert.tokenizer, TEXTS[:2], tiny_bert.model.cfg.max_len)
    fresh = ft._Classifier(__import__("copy").deepcopy(tiny_bert.model), head="cls_fresh")
    assert not torch.equal(fresh.bert.pooler.weight, tiny_bert.model.pooler.weight)  # NSP's pooler not reused
    mix = ft._Classifier(__import__("copy").deepcopy(tiny_bert.model), head="mix")
    out = mix(ids, torch.zeros_like(ids))
    assert out.shape == (2, 2)
    out.sum().backward()
    assert mix.mix.scalars.grad is not None and mix.mix.scalars.grad.abs().sum() > 0  # the mix learns
    with pytest.raises(ValueError):
        ft._Classifier(tiny_bert.model, head="max")


def test_select_keeps_the_best_epoch(tiny_bert):
    clf = ft.fine_tune(
        tiny_bert.model, tiny_bert.tokenizer, TEXTS, LABELS, epochs=3, batch=2, lr=1e-3, select=(TEXTS[:4], LABELS[:4])
    )
    hist = clf.history
    assert [h["epoch"] for h in hist] == [1, 2, 3] and all(0 <= h["select_acc"] <= 1 for h in hist)
    best = max(hist, key=lambda h: h["select_acc"])
    assert clf.best_epoch == best["epoch"]
    got = float((ft.predict(clf, tiny_bert.tokenizer, TEXTS[:4]) == np.array(LABELS[:4])).mean())
    assert got == pytest.approx(best["select_acc"])  # the weights returned are that epoch's


def test_bert_features_match_the_encoder_and_cover_long_texts(tiny_bert):
    words = [["这家", "店", "的", "菜", "很", "好吃"], ["一般"]]
    long = [w for w in ["很好", "不错", "一般", "太差", "喜欢"] * 40]  # 200 characters > max_len - 2 = 78
    wf, cls, mean = ft.bert_features(tiny_bert, words + [long], batch_size=2)
    L1, D = tiny_bert.model.cfg.layers + 1, tiny_bert.model.cfg.hidden
    assert [f.shape for f in wf] == [(6, L1, D), (1, L1, D), (len(long), L1, D)] and cls.shape == (3, L1, D)
    for i, ws in enumerate(words):
        text = "".join(ws)
        e = tiny_bert.encode_tokens([char_tokens(text)], [text], need_weights=False)[0]
        np.testing.assert_allclose(cls[i], e.layers[:, 0], atol=1e-5)
        np.testing.assert_allclose(mean[i], e.layers[:, 1:-1].mean(1), atol=1e-5)
        np.testing.assert_allclose(wf[i][-1].astype(np.float32), e.layers[:, -3:-1].mean(1), atol=2e-2)  # 好吃
    text = "".join(long)
    cap = tiny_bert.model.cfg.max_len - 2
    assert np.abs(wf[2].astype(np.float32)).sum(axis=(1, 2)).min() > 0  # every word has a vector, the last ones too
    tail = text[-cap:]
    e = tiny_bert.encode_tokens([char_tokens(tail)], [tail], need_weights=False)[0]
    np.testing.assert_allclose(wf[2][-1].astype(np.float32), e.layers[:, -3:-1].mean(1), atol=2e-2)  # read in context


def test_full_size_rows_name_each_way():
    from ctxlib.evaluation import finetune_live as fl
    from ctxlib.records import EvalResult

    new = EvalResult.from_dict(
        {
            "task": "sentiment",
            "score": 0.8,
            "score_from": "features",
            "input_score": 0.8,
            "finetune_score": 0.77,
            "per_layer_score": [0.7, 0.75],
        }
    )
    assert [(k, v) for k, v, _ in fl.full_size_rows(new, None)] == [
        ("bert_finetuned", 0.77),
        ("bert_input", 0.8),
        ("bert_probe", 0.75),
    ]
    running = EvalResult.from_dict(
        {"task": "sentiment", "score": 0.8, "score_from": "features", "input_score": 0.8, "finetune_score": None}
    )  # fine-tuning seeds not done yet: no row, not 0.8
    assert [k for k, _, _ in fl.full_size_rows(running, None)] == ["bert_input"]


def test_results_claim_names_the_fine_tuned_figure_apart(tmp_path):
    import json

    from ctxlib import results

    for m, d in (
        (
            "bert",
            {
                "task": "sentiment",
                "score": 0.81,
                "score_from": "features",
                "input_score": 0.81,
                "finetune_score": None,
                "n_train": 3000,
            },
        ),
        ("elmo", {"task": "sentiment", "score": 0.80, "word2vec_score": 0.79}),
    ):
        (tmp_path / m).mkdir()
        (tmp_path / m / "eval_sentiment.json").write_text(json.dumps(d), encoding="utf-8")
    c = {c.key: c for c in results.claims(tmp_path)}["bert_vs_elmo"]
    assert c.figures["bert"] == 0.81 and c.figures["bert_finetuned"] is None and c.figures["bert_features"] == 0.81
    assert [(x.a_value, x.b_value) for x in c.comparisons] == [(0.81, 0.80)]  # BERT against ELMo only
    assert c.figures["word2vec"] == 0.79  # shown for reference


def test_finetune_recipe_names_the_head_the_eval_used():
    from ctxlib.app.i18n import catalogue
    from ctxlib.evaluation import finetune as ft
    from ctxlib.evaluation import finetune_live as fl
    from ctxlib.records import EvalResult

    rec = {"head": "mean", "epochs": 4, "lr": 2e-4, "batch": 32}
    new = EvalResult.from_dict({"task": "sentiment", "score": 0.8, "finetune_recipe": rec})
    assert fl.finetune_recipe(new) == rec
    for bad in (None, "mean", {"head": "cls"}, {"head": "pool", "epochs": 3}, {"head": "cls", "epochs": "x"}):
        old = EvalResult.from_dict({"task": "sentiment", "score": 0.8, **({"finetune_recipe": bad} if bad else {})})
        assert fl.finetune_recipe(old) is None  # older or malformed file: the page's plain label
    assert fl.finetune_recipe(None) is None
    for lang in ("en", "zh"):
        for head in ft.HEADS:  # every head fine_tune knows has a label in both languages
            assert f"finetune.full.head_{head}" in catalogue(lang)
    assert (
        ft.HEADS == ("cls", "cls_fresh", "mean", "mix")
        and ft.HEAD in ft.HEADS
        and ft.SCORE_FROM in ("finetune", "features")
    )

"""ctxlib.mechanics: one block taken apart equals the model's own forward pass (shipped BERT and GPT, and tiny random
models for the other position/causal combinations); the mask, rotary scores by distance, the sinusoidal table and
the layer-0 position check."""

import math

import numpy as np
import pytest
import torch

import ctxlib
from ctxlib import checkpoint, mechanics
from ctxlib.models.bert import BertConfig, BertModel, CharTokenizer
from ctxlib.models.bert_encoder import BertEncoder
from ctxlib.models.gpt import GptEncoder
from ctxlib.vocab import Vocab

TEXT = "苹果很好吃，苹果手机也好用"


def _shipped(name):
    if not (checkpoint.CHECKPOINT_DIR / name / "config.json").is_file():
        pytest.skip(f"checkpoints/{name} missing: python -m ctxlib train {name}")
    return ctxlib.load(name)


@pytest.fixture(scope="module", params=["bert", "gpt"])
def shipped(request):
    return _shipped(request.param)


def _tiny(positions: str, causal: bool):
    torch.manual_seed(0)
    chars = sorted(set(TEXT + "天安门我爱北京"))
    tok = CharTokenizer(
        Vocab.build([chars], min_count=1, specials=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], unk="[UNK]")
    )
    model = BertModel(
        BertConfig(
            vocab_size=len(tok),
            hidden=32,
            layers=2,
            heads=2,
            ffn=64,
            max_len=40,
            positions=positions,
            causal=causal,
            dropout=0.0,
            attn_dropout=0.0,
        )
    )
    for p in model.parameters():  # random biases and LayerNorm gains too, so a wrong slice cannot hide behind zeros
        torch.nn.init.normal_(p, 0.0, 0.3)
    return (GptEncoder if causal else BertEncoder)("tiny", {}, {}, None, model, tok)


@torch.no_grad()
def _model_forward(enc, text):
    _, ids = mechanics.token_ids(enc, text)
    layers, atts = enc.model(torch.tensor([ids]), need_weights=True, all_layers=True)
    return [h[0].numpy() for h in layers], [a[0].numpy() for a in atts]


def _check_against_model(enc, text):
    layers, atts = _model_forward(enc, text)
    cfg = enc.model.cfg
    for layer in range(cfg.layers):
        for head in range(cfg.heads):
            t = mechanics.trace_block(enc, text, layer, head)
            np.testing.assert_allclose(t.weights, atts[layer][head], rtol=0, atol=1e-5)
            np.testing.assert_allclose(t.x, layers[layer], rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(t.hidden, layers[layer + 1], rtol=1e-5, atol=1e-5)
        # the numbers chain as the formulas say (float64 numpy references)
        np.testing.assert_allclose(t.q_raw, t.ln1 @ t.w_q + t.b_qkv[0], rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(t.v, t.ln1 @ t.w_v + t.b_qkv[2], rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(t.scores, t.q.astype(np.float64) @ t.k.T / math.sqrt(t.q.shape[1]), atol=1e-4)
        np.testing.assert_allclose(t.head_out, t.weights.astype(np.float64) @ t.v, atol=1e-5)
        d = t.q.shape[1]
        np.testing.assert_array_equal(t.heads[:, t.head * d : (t.head + 1) * d], t.head_out)
        np.testing.assert_allclose(t.out, t.resid + t.ffn_out, atol=1e-5)
        np.testing.assert_allclose(t.resid, t.x + t.attn_out, atol=1e-5)


def test_shipped_block_equals_the_models_forward(shipped):
    _check_against_model(shipped, TEXT)


@pytest.mark.parametrize("positions,causal", [("rope", False), ("absolute", False), ("rope", True), ("absolute", True)])
def test_tiny_block_equals_the_models_forward(positions, causal):
    _check_against_model(_tiny(positions, causal), "我爱北京天安门")


def test_causal_mask_zeroes_the_upper_triangle():
    t = mechanics.trace_block(_shipped("gpt"), TEXT, 1, 2)
    upper = np.triu(np.ones_like(t.weights, dtype=bool), 1)
    assert (t.weights[upper] == 0).all() and np.isneginf(t.masked[upper]).all()
    assert (t.weights[~upper] > 0).all() and not t.keep[upper].any()
    np.testing.assert_allclose(t.weights.sum(1), 1, atol=1e-6)
    b = mechanics.trace_block(_shipped("bert"), TEXT, 1, 2)
    assert b.keep.all() and (b.weights[np.triu(b.keep, 1)] > 0).all()  # BERT looks both ways


def test_rotation_only_where_the_model_rotates():
    b = mechanics.trace_block(_shipped("bert"), TEXT, 0, 0)
    assert b.rotary and np.array_equal(b.q[0], b.q_raw[0]) and not np.allclose(b.q[3], b.q_raw[3])
    np.testing.assert_allclose(np.linalg.norm(b.q, axis=1), np.linalg.norm(b.q_raw, axis=1), rtol=1e-5)  # rotations
    g = mechanics.trace_block(_shipped("gpt"), TEXT, 0, 0)
    assert not g.rotary and np.array_equal(g.q, g.q_raw)


def test_rotary_score_by_distance():
    t = mechanics.trace_block(_shipped("bert"), TEXT, 2, 1)
    q, k = t.q_raw[3], t.k_raw[5]
    s = mechanics.rotary_by_distance(q, k, 30)
    assert s.shape == (31,)
    assert s[0] == pytest.approx(float(q.astype(np.float64) @ k) / math.sqrt(len(q)), abs=1e-5)
    assert np.ptp(s) > 0.1 * abs(s[0])  # the distance changes the score
    # the same distance anywhere in the sentence gives the same score: only s - t matters
    T = 12
    qs = mechanics.rotate(torch.tensor(q).expand(T, -1).contiguous()).numpy()
    ks = mechanics.rotate(torch.tensor(k).expand(T, -1).contiguous()).numpy()
    for start in (0, 4, 7):
        assert float(qs[start + 3] @ ks[start]) / math.sqrt(len(q)) == pytest.approx(float(s[3]), abs=1e-4)
    # the frequencies are the model's: feature pair 0 turns by 1 rad a step, the last by base^(-(d/2-1)/(d/2))
    f = mechanics.rotary_frequencies(len(q))
    assert f[0] == 1 and f[-1] == pytest.approx(10000 ** (-(len(q) // 2 - 1) / (len(q) // 2)))


def test_sinusoidal_table():
    pe = mechanics.sinusoidal_table(50, 16)
    assert pe.shape == (50, 16) and pe.dtype == np.float32
    for p, i in ((0, 0), (7, 3), (49, 7)):
        assert pe[p, 2 * i] == pytest.approx(math.sin(p / 10000 ** (2 * i / 16)), abs=1e-6)
        assert pe[p, 2 * i + 1] == pytest.approx(math.cos(p / 10000 ** (2 * i / 16)), abs=1e-6)
    assert (pe[0, 0::2] == 0).all() and (pe[0, 1::2] == 1).all()
    with pytest.raises(ValueError):
        mechanics.sinusoidal_table(4, 7)


def test_layer0_holds_position_only_with_absolute_positions():
    bert, gpt = _shipped("bert"), _shipped("gpt")
    assert mechanics.position_scheme(bert.model.cfg) == {
        "scheme": "rope",
        "embedding_has_position": False,
        "max_len": 128,
    }
    assert mechanics.position_scheme(gpt.model.cfg)["embedding_has_position"]
    b = mechanics.repeated_char_check(bert, TEXT)
    assert b["char"] == "苹" and b["positions"] == (1, 7)
    assert b["layer0_max_diff"] == 0 and b["layer1_max_diff"] > 0.1  # same at layer 0, context moves it at layer 1
    g = mechanics.repeated_char_check(gpt, TEXT)
    assert g["layer0_max_diff"] > 0.1 and g["layer0_cos"] < 0.99  # learned positions are in the embedding
    once = mechanics.repeated_char_check(bert, "我爱北京")  # no repeat: the sentence written twice
    assert once["text"] == "我爱北京我爱北京" and once["positions"] == (1, 5)


@pytest.mark.parametrize(
    "text,code", [("", "empty"), ("  \n", "empty"), ("苹果\x07好吃", "control"), ("好" * 5000, "too_long")]
)
def test_bad_sentences(text, code):
    with pytest.raises(mechanics.MechanicsInputError) as e:
        mechanics.check_text(text)
    assert e.value.code == code


def test_bad_layer_or_head():
    with pytest.raises(ValueError):
        mechanics.trace_block(_shipped("bert"), TEXT, 4, 0)
    with pytest.raises(mechanics.MechanicsInputError):
        mechanics.trace_block(_shipped("bert"), "ᚠᚡᚢ", 0, 0)  # no known character

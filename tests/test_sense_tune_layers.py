"""Sense-tuning pulls on the vectors the app shows: for each layer counted from the top (SenseTuneConfig.layers,
1 = the last layer), the vector the contrastive loss uses equals the encoder's `word_vectors` at that layer, for a
BERT (two and three layers) and an ELMo (its two biLSTM layers)."""

import numpy as np
import pytest
import torch

from ctxlib import checkpoint, corpus
from ctxlib.training.sense_tune import SIDES, SenseTuneConfig

TEXTS = ["我买了一斤红苹果", "苹果公司发布了新手机", "这个苹果又甜又脆，我很喜欢"]  # written for this test


def _bert_src(tiny_bert, tmp_path, layers):
    from ctxlib.models.bert import BertConfig, BertModel

    torch.manual_seed(1)
    model = BertModel(
        BertConfig(vocab_size=len(tiny_bert.tokenizer), hidden=32, layers=layers, heads=2, ffn=64, max_len=80)
    )
    src = tmp_path / f"bert{layers}"
    checkpoint.save(
        src,
        "bert",
        model.cfg.to_json(),
        tiny_bert.tokenizer.vocab.to_json(),
        model.state_dict(),
        {"steps": 1, "run": {"preset": "tiny", "seed": 0}},
        half=False,
    )
    return src


def _loss_vectors(kind, src, from_top):
    side = SIDES[kind](src, SenseTuneConfig(mlm_batch=2), 0, corpus.load("reviews", "train")[:20])
    side.model.eval()  # word_vectors runs the model in eval mode: no dropout on either side
    items = [side.item(t, "苹果") for t in TEXTS]
    with torch.no_grad():
        return side.enc, [z.numpy() for z in side.vectors(items, from_top)]


@pytest.mark.parametrize("layers", [2, 3])
def test_bert_loss_vectors_are_the_word_vectors_at_the_layers(tiny_bert, tmp_path, layers):
    from ctxlib.models.bert_encoder import BertEncoder

    src = _bert_src(tiny_bert, tmp_path, layers)
    from_top = tuple(range(1, layers + 1))
    _, zs = _loss_vectors("bert", src, from_top)
    wv = BertEncoder.from_checkpoint(src).word_vectors(TEXTS, "苹果")  # (n, layers + 1, D): embeddings first
    assert wv.shape[1] == layers + 1
    for k, z in zip(from_top, zs):
        np.testing.assert_allclose(z, wv[:, layers + 1 - k], atol=1e-5, err_msg=f"layer {k} from the top")
    assert not np.allclose(zs[0], zs[1], atol=1e-3)  # the layers differ, so a swapped index would fail


def test_elmo_loss_vectors_are_the_word_vectors_at_the_layers(elmo_tiny):
    from ctxlib.models.elmo import ElmoEncoder

    enc = ElmoEncoder.from_checkpoint(elmo_tiny)
    n = enc.model.cfg.n_layers
    assert n == 2
    _, zs = _loss_vectors("elmo", elmo_tiny, (1, 2))
    wv = enc.word_vectors(TEXTS, "苹果")
    assert wv.shape[1] == n + 1
    for k, z in zip((1, 2), zs):
        np.testing.assert_allclose(z, wv[:, n + 1 - k], atol=1e-5, err_msg=f"layer {k} from the top")
    assert not np.allclose(zs[0], zs[1], atol=1e-3)


def test_default_layers_are_the_top_two():
    assert SenseTuneConfig().layers == (2, 1)

"""The GPT training path's speed levers (bench/gpt_vs_hf.py) keep the maths: the fused LM head + cross-entropy
gives the plain path's loss and gradients, the optimised training step stays causal, and the app's (no-grad)
outputs do not take the fused path at all."""

import copy

import pytest
import torch
import torch.nn.functional as F

from ctxlib.models import bert as bert_model
from ctxlib.models.bert import BertConfig, BertModel, linear_cross_entropy


def _model(**kw):
    torch.manual_seed(0)
    return BertModel(
        BertConfig(
            vocab_size=60,
            hidden=32,
            layers=2,
            heads=4,
            ffn=64,
            max_len=16,
            causal=True,
            dropout=0.0,
            attn_dropout=0.0,
            **kw,
        )
    ).train()


@pytest.mark.parametrize("chunk", [4, 7, 1 << 30])
def test_fused_head_gives_the_plain_loss_and_gradients(monkeypatch, chunk):
    monkeypatch.setattr(bert_model, "LM_CHUNK", chunk)
    g = torch.Generator().manual_seed(1)
    h = torch.randn(23, 16, generator=g, requires_grad=True)
    w = torch.randn(40, 16, generator=g, requires_grad=True)
    b = torch.randn(40, generator=g, requires_grad=True)
    labels = torch.randint(0, 40, (23,), generator=g)
    labels[[3, 11]] = -100  # ignored, as F.cross_entropy does
    ref = F.cross_entropy(F.linear(h, w, b), labels)
    ref_g = torch.autograd.grad(2.5 * ref, (h, w, b))
    out = linear_cross_entropy(h, w, b, labels, fused=True)
    out_g = torch.autograd.grad(2.5 * out, (h, w, b))
    assert abs(float(out.detach()) - float(ref.detach())) < 1e-5
    for a, r in zip(out_g, ref_g):
        assert torch.allclose(a, r, atol=1e-6, rtol=1e-5)
    assert float(out_g[0][[3, 11]].abs().max()) == 0.0  # ignored rows get no gradient


@pytest.mark.parametrize("fill", ["packed", "dense"])
def test_optimised_step_matches_the_plain_step_on_a_tiny_model(monkeypatch, fill):
    """Loss and every parameter's gradient (the tied embedding gets both the input and the head's share) agree with
    FUSED_LM_HEAD off, on a padded batch (packed path) and a full one (dense path)."""
    ids = torch.tensor([[2, 7, 8, 9, 10, 11, 12, 13], [2, 12, 13, 14, 0, 0, 0, 0], [2, 20, 21, 22, 23, 24, 25, 0]])
    if fill == "dense":
        ids = torch.tensor([[2, 7, 8, 9, 10, 11, 12, 13], [2, 12, 13, 14, 15, 16, 17, 18]])
    labels = torch.where(ids != 0, torch.roll(ids, -1, 1) % 50 + 5, torch.full_like(ids, -100))
    batch = {"ids": ids, "labels": labels}
    m = _model()
    m2 = copy.deepcopy(m)
    loss, n = m.loss(batch)
    loss.backward()
    monkeypatch.setattr(bert_model, "FUSED_LM_HEAD", False)
    ref, n2 = m2.loss(batch)
    ref.backward()
    assert n == n2 == int((ids != 0).sum()) and abs(float(loss.detach()) - float(ref.detach())) < 1e-5
    for (name, p), p2 in zip(m.named_parameters(), m2.parameters()):
        assert torch.allclose(p.grad, p2.grad, atol=1e-6, rtol=1e-4), name


def test_optimised_training_loss_stays_causal():
    """With grad on (the fused head), a loss over the first k targets does not change when later characters do,
    and neither do the gradients it sends to the model."""
    m = _model()
    ids = torch.tensor([[2, 7, 8, 9, 10, 11, 12, 13], [2, 12, 13, 14, 15, 0, 0, 0]])
    labels = torch.where(ids != 0, torch.roll(ids, -1, 1), torch.full_like(ids, -100))
    labels[:, 3:] = -100  # score positions 0..2 only
    later = ids.clone()
    later[0, 4:] = torch.tensor([30, 31, 32, 33])
    later[1, 3:5] = torch.tensor([40, 41])
    grads = []
    for x in (ids, later):
        m.zero_grad(set_to_none=True)
        loss, _ = m.loss({"ids": x, "labels": labels})
        loss.backward()
        grads.append((float(loss.detach()), m.blocks[0].attn.qkv.weight.grad.clone()))
    assert abs(grads[0][0] - grads[1][0]) < 1e-6
    assert torch.allclose(grads[0][1], grads[1][1], atol=1e-7)


def test_no_grad_outputs_do_not_take_the_fused_path(monkeypatch):
    """Evaluation (held-out bits per character) runs without gradients: the plain path, the numbers as before."""
    called = []
    monkeypatch.setattr(bert_model._LinearCrossEntropy, "apply", lambda *a: called.append(1))
    m = _model().eval()
    ids = torch.tensor([[2, 7, 8, 9, 10, 11, 12, 13]])
    with torch.no_grad():
        loss, _ = m.loss({"ids": ids, "labels": torch.roll(ids, -1, 1)})
    assert not called and torch.isfinite(loss)


def test_fused_head_with_nothing_to_predict_is_nan_not_an_error():
    h = torch.randn(3, 8, requires_grad=True)
    w, b = torch.randn(10, 8, requires_grad=True), torch.zeros(10, requires_grad=True)
    out = linear_cross_entropy(h, w, b, torch.full((3,), -100), fused=True)
    assert torch.isnan(out.detach())

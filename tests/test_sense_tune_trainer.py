"""Sense-tuning steps through the shared Trainer (ctxlib.training.trainer): its learning-rate schedule sets the
optimizer's lr, its gradient clipping runs, its NaN check refuses a bad loss. Each test would fail if sense_tune went
back to a loop of its own. Also the Trainer's extension points the tune uses (loss_fn, optimizer, schedule), and its
default schedule, which the other trainings use, left as it was."""

import sys

import pytest
import torch

from ctxlib import checkpoint, corpus
from ctxlib.training import sense_tune as st
from ctxlib.training.trainer import TrainConfig, Trainer

CFG = dict(steps=5, lr=1e-3, warmup=2, words=2, per_word=4, mlm_batch=4)


@pytest.fixture(scope="module")
def src(tiny_bert, tmp_path_factory):
    d = tmp_path_factory.mktemp("st") / "src"
    m = tiny_bert.model
    checkpoint.save(d, "bert", m.cfg.to_json(), tiny_bert.tokenizer.vocab.to_json(), m.state_dict(), {"steps": 1})
    return d


def _tune(src, out, **kw):
    pars = corpus.load("reviews", "train")[:60]
    return st.sense_tune(src, out, st.SenseTuneConfig(**{**CFG, **kw}), seed=0, paragraphs=pars)


def test_lr_follows_the_trainer_schedule_and_the_trainer_clips(src, tmp_path, monkeypatch):
    lrs, clips = [], []
    lr_at, clip = Trainer.lr_at, torch.nn.utils.clip_grad_norm_

    def spy_lr(self, step, trained_s=None):
        lrs.append((step, lr_at(self, step, trained_s)))
        return lrs[-1][1]

    def spy_clip(params, max_norm, *a, **kw):
        clips.append((sys._getframe(1).f_code.co_filename, max_norm))
        return clip(params, max_norm, *a, **kw)

    monkeypatch.setattr(Trainer, "lr_at", spy_lr)
    monkeypatch.setattr(torch.nn.utils, "clip_grad_norm_", spy_clip)
    _tune(src, tmp_path / "out", clip=0.5)
    # the tune's schedule: the decay from step 0 to 0 under the warmup ramp, computed by the Trainer
    assert lrs == [(s, 1e-3 * min(1.0, (s + 1) / 2) * (1 - s / 5)) for s in range(5)]
    assert [(f.endswith("trainer.py"), n) for f, n in clips] == [(True, 0.5)] * 5


def test_the_optimizer_takes_its_lr_from_the_trainer(src, tmp_path, monkeypatch):
    a = checkpoint.load(src)[2]
    moved = checkpoint.load(_tune(src, tmp_path / "real"))[2]
    assert not all(torch.equal(a[k].half().float(), moved[k].float()) for k in a)
    monkeypatch.setattr(Trainer, "lr_at", lambda self, step, trained_s=None: 0.0)
    b = checkpoint.load(_tune(src, tmp_path / "out"))[2]
    assert all(torch.equal(a[k].half().float(), b[k].float()) for k in a)  # lr 0 from the Trainer: no weight moved


def test_a_nan_loss_is_refused_by_the_trainer_and_nothing_is_saved(src, tmp_path, monkeypatch):
    supcon = st.supcon_loss
    monkeypatch.setattr(st, "supcon_loss", lambda z, y, tau: supcon(z, y, tau) * float("nan"))
    with pytest.raises(FloatingPointError, match="loss became nan at step 1; lower the learning rate") as e:
        _tune(src, tmp_path / "out")
    assert e.traceback[-1].path.name == "trainer.py"
    assert not (tmp_path / "out").exists()


def test_sense_tune_config_refuses_steps_or_lr_that_are_not_positive():
    for bad in ({"steps": 0}, {"lr": 0.0}, {"lr": float("nan")}):
        with pytest.raises(ValueError, match="positive"):
            st.SenseTuneConfig(**bad)


class Toy(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 1)

    def loss(self, batch):
        x, y = batch
        return torch.nn.functional.mse_loss(self.lin(x).squeeze(-1), y), len(y)


def _batches():
    g = torch.Generator().manual_seed(0)
    xs = [torch.randn(32, 4, generator=g) for _ in range(10)]
    return [(x, x @ torch.tensor([1.0, -2.0, 0.5, 3.0])) for x in xs]


def test_trainer_loss_fn_and_optimizer_stand_in_for_the_models():
    torch.manual_seed(0)
    m = Toy()
    made = []

    def sgd(model):
        made.append(torch.optim.SGD(model.parameters(), lr=0.1))
        return made[-1]

    def doubled(batch):  # a loss adapter: another target than model.loss's
        return m.loss((batch[0], 2 * batch[1]))

    cfg = TrainConfig(steps=150, lr=0.1, warmup=5, clip=0.0, amp="off", progress=False)
    tr = Trainer(m, _batches(), cfg, device="cpu", loss_fn=doubled, optimizer=sgd)
    tr.run()
    assert tr.opt is made[0] and isinstance(tr.opt, torch.optim.SGD)
    assert tr.opt.param_groups[0]["lr"] == tr.lr_at(149)  # the schedule set the lr of the given optimizer
    w = m.lin.weight.detach().squeeze()
    assert torch.allclose(w, 2 * torch.tensor([1.0, -2.0, 0.5, 3.0]), atol=0.05), w


def test_trainer_schedules():
    cfg = TrainConfig(steps=20, lr=0.3, warmup=4, min_lr_ratio=0.1, budget_s=10.0, progress=False)
    tr = Trainer(Toy(), _batches(), cfg, device="cpu")
    for s in range(25):  # the default, which the pre-trainings use, computed as it was
        frac = max((s - 4) / 16, tr.trained_s / 10.0)
        want = 0.3 * (s + 1) / 4 if s < 4 else 0.3 * (0.1 + 0.9 * max(0.0, 1 - frac))
        assert tr.lr_at(s) == want, s
    tr.trained_s = 8.0  # the time budget pulls the decay forward
    assert tr.lr_at(6) == 0.3 * (0.1 + 0.9 * (1 - 0.8))
    fs = Trainer(
        Toy(), _batches(), TrainConfig(steps=20, lr=0.3, warmup=4, progress=False), schedule="decay_from_start"
    )
    for s in range(20):
        assert fs.lr_at(s) == 0.3 * min(1.0, (s + 1) / 4) * (0.1 + 0.9 * (1 - s / 20)), s
    with pytest.raises(ValueError, match="schedule"):
        Trainer(Toy(), _batches(), cfg, schedule="cosine")

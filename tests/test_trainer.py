import pytest
import torch

from ctxlib.device import resolve_device
from ctxlib.training.trainer import TrainConfig, Trainer


class Toy(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 1)

    def loss(self, batch):
        x, y = batch
        return torch.nn.functional.mse_loss(self.lin(x).squeeze(-1), y), len(y)


def _batches(seed=0):
    g = torch.Generator().manual_seed(seed)
    w = torch.tensor([1.0, -2.0, 0.5, 3.0])
    out = []
    for _ in range(20):
        x = torch.randn(32, 4, generator=g)
        out.append((x, x @ w))
    return out


@pytest.mark.parametrize("amp", ["off", "bf16"])
def test_trainer_reduces_loss(amp):
    torch.manual_seed(0)
    m = Toy()
    data = _batches()
    before = float(sum(m.loss(b)[0] for b in data[:5]))
    s = Trainer(m, data, TrainConfig(steps=200, lr=0.05, warmup=10, amp=amp, progress=False), device="cpu").run()
    after = float(sum(m.loss(b)[0] for b in data[:5]))
    assert after < 0.1 * before
    assert s["steps"] == 200 and s["tokens_seen"] == 200 * 32 and s["device"] == "cpu"


def test_time_limit_stops_early(monkeypatch):
    """A clock that advances 0.25 s per step: with time_limit=1.0 the run stops after the first step whose
    elapsed time (read before that step's callback advances the clock) exceeds 1.0, i.e. at step 6 (1.25 s)."""
    from types import SimpleNamespace

    from ctxlib.training import trainer

    now = [100.0]
    monkeypatch.setattr(trainer, "time", SimpleNamespace(time=lambda: now[0]))

    def tick(step, loss, info):
        now[0] += 0.25

    s = Trainer(
        Toy(), _batches(), TrainConfig(steps=1000, lr=0.01, time_limit=1.0, progress=False), device="cpu", callback=tick
    ).run()
    assert s["stopped_early"] and not s["finished"]
    assert s["steps"] == 6 and s["tokens_seen"] == 6 * 32 and s["wall_s"] == pytest.approx(1.2)  # round(1.25, 1)


def test_lr_schedule_and_config_errors():
    tr = Trainer(
        Toy(), _batches(), TrainConfig(steps=100, lr=1.0, warmup=10, min_lr_ratio=0.1, progress=False), device="cpu"
    )
    assert tr.lr_at(0) == pytest.approx(0.1)
    assert tr.lr_at(9) == pytest.approx(1.0)
    assert tr.lr_at(100) == pytest.approx(0.1)
    with pytest.raises(ValueError):
        TrainConfig(steps=0)
    with pytest.raises(ValueError):
        TrainConfig(amp="fp8")
    with pytest.raises(ValueError):
        resolve_device("tpu")


def test_sigterm_ends_the_run_after_the_step_and_restores_the_handler():
    import os
    import signal

    before = signal.getsignal(signal.SIGTERM)

    def cb(step, loss, info):
        if step == 3:
            os.kill(os.getpid(), signal.SIGTERM)

    s = Trainer(Toy(), _batches(), TrainConfig(steps=50, lr=0.01, progress=False), device="cpu", callback=cb).run()
    assert s["stopped_early"] and not s["finished"] and s["steps"] <= 5
    assert signal.getsignal(signal.SIGTERM) is before

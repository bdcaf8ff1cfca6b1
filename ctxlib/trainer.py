"""A trainer that knows nothing about the model (after minGPT's Trainer).

The model exposes `loss(batch) -> (loss, n_tokens)`; the trainer handles device,
mixed precision (bf16 autocast on CUDA, optional on CPU), gradient clipping, a
warmup + linear-decay schedule, a time limit, logging, a tqdm bar with tokens/s
and a progress callback (used by the app).
"""
from __future__ import annotations

import logging
import math
import time
from dataclasses import asdict, dataclass
from typing import Callable, Iterator

import torch

log = logging.getLogger(__name__)


def resolve_device(device: str = "auto") -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("--device cuda asked for, but no CUDA device is available; use --device cpu or auto")
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device must be auto, cpu or cuda, got {device!r}")
    return torch.device(device)


def to_device(batch, device):
    if torch.is_tensor(batch):
        return batch.to(device, non_blocking=True)
    if isinstance(batch, dict):
        return {k: to_device(v, device) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return type(batch)(to_device(v, device) for v in batch)
    return batch


@dataclass
class TrainConfig:
    steps: int = 1000  # optimizer steps
    lr: float = 1e-3  # peak learning rate
    warmup: int = 100  # linear warmup steps
    min_lr_ratio: float = 0.1  # final lr as a share of the peak
    weight_decay: float = 0.01  # AdamW decay on matrices only
    clip: float = 1.0  # max grad norm (0 = off)
    amp: str = "auto"  # "auto" (bf16 on CUDA), "bf16" (also on CPU), "off"
    time_limit: float = 0.0  # seconds; 0 = none. Stops early, the summary says so
    log_every: int = 100  # steps between log lines
    progress: bool = True  # tqdm bar on stderr

    def __post_init__(self):
        if self.steps <= 0 or self.lr <= 0:
            raise ValueError("steps and lr must be positive")
        if self.amp not in ("auto", "bf16", "off"):
            raise ValueError("amp must be auto, bf16 or off")


class Trainer:
    def __init__(self, model: torch.nn.Module, batches: Iterator, cfg: TrainConfig, device: str = "auto",
                 callback: Callable[[int, float, dict], None] | None = None):
        self.model, self.batches, self.cfg, self.callback = model, batches, cfg, callback
        self.device = resolve_device(device)
        self.history: list[tuple[int, float]] = []

    def _amp_ctx(self):
        use = (self.cfg.amp == "bf16") or (self.cfg.amp == "auto" and self.device.type == "cuda")
        if use:
            return torch.autocast(self.device.type, dtype=torch.bfloat16)
        return torch.autocast(self.device.type, enabled=False)

    def _optimizer(self):
        decay, no_decay = [], []
        for n, p in self.model.named_parameters():
            if not p.requires_grad:
                continue
            (decay if p.dim() >= 2 and "emb" not in n else no_decay).append(p)
        groups = [{"params": decay, "weight_decay": self.cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
        kw = {"fused": True} if self.device.type == "cuda" else {}
        return torch.optim.AdamW(groups, lr=self.cfg.lr, betas=(0.9, 0.98), eps=1e-6, **kw)

    def lr_at(self, step: int) -> float:
        c = self.cfg
        if step < c.warmup:
            return c.lr * (step + 1) / c.warmup
        frac = (step - c.warmup) / max(1, c.steps - c.warmup)
        return c.lr * (c.min_lr_ratio + (1 - c.min_lr_ratio) * max(0.0, 1 - frac))

    def run(self) -> dict:
        c = self.cfg
        model = self.model.to(self.device)
        model.train()
        opt = self._optimizer()
        bar = None
        if c.progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=c.steps, desc="train", unit="step", dynamic_ncols=True)
        t0 = time.time()
        tokens = 0
        step = 0
        ema = None
        stopped_early = False
        it = iter(self.batches)
        while step < c.steps:
            try:
                batch = next(it)
            except StopIteration:
                it = iter(self.batches)
                batch = next(it)
            batch = to_device(batch, self.device)
            for g in opt.param_groups:
                g["lr"] = self.lr_at(step)
            with self._amp_ctx():
                loss, n_tok = model.loss(batch)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            if c.clip > 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), c.clip)
            opt.step()
            step += 1
            tokens += int(n_tok)
            lv = float(loss.detach())
            if not math.isfinite(lv):
                raise FloatingPointError(f"loss became {lv} at step {step}; lower the learning rate")
            ema = lv if ema is None else 0.98 * ema + 0.02 * lv
            elapsed = time.time() - t0
            if step % c.log_every == 0 or step == c.steps:
                self.history.append((step, ema))
                log.info("step %d/%d loss %.4f tok/s %.0f", step, c.steps, ema, tokens / max(elapsed, 1e-9))
            if bar is not None:
                bar.update(1)
                bar.set_postfix(loss=f"{ema:.3f}", tok_s=f"{tokens / max(elapsed, 1e-9):.0f}")
            if self.callback is not None:
                self.callback(step, ema, {"tokens": tokens, "elapsed": elapsed})
            if c.time_limit and elapsed > c.time_limit:
                stopped_early = True
                break
        if bar is not None:
            bar.close()
        wall = time.time() - t0
        model.eval()
        return {"steps": step, "planned_steps": c.steps, "stopped_early": stopped_early, "tokens_seen": tokens,
                "wall_s": round(wall, 1), "tokens_per_s": round(tokens / max(wall, 1e-9), 1),
                "device": str(self.device), "final_loss": round(ema, 4) if ema is not None else None,
                "loss_history": [(s, round(l, 4)) for s, l in self.history], "train_config": asdict(c)}

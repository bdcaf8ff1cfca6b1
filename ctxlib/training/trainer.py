"""A trainer that knows nothing about the model (after minGPT's Trainer).

The model exposes `loss(batch) -> (loss, n_tokens)`; the trainer handles device, mixed precision
(bf16 autocast on CUDA, optional on CPU), gradient clipping, a warmup + linear-decay schedule,
time limits, data parallelism, resumable state, logging, a tqdm bar with tokens/s and callbacks.

- Schedule: linear warmup, then linear decay to `min_lr_ratio` of the peak. With `budget_s` the
  decay follows whichever runs out first, steps or training seconds (so a run stopped by its time
  budget still ends at the low learning rate). `time_limit` only stops this process (one stretch
  of a longer run); it never bends the schedule. A run resumed from the weights alone (no optimizer
  state) ramps its lr up again over `warmup` steps from the step where the fresh optimizer joined.
- Data parallel: under `torchrun` (torch.distributed initialised) the model is wrapped in
  DistributedDataParallel (gloo on CPU, nccl on CUDA). Each rank draws its own shard from its
  `batches`; gradients are averaged, so with equal shard sizes k steps on 2 ranks equal k steps
  of one process on the concatenated batch. Stop/save decisions and the clock are agreed on by
  an all-reduce each step, so ranks never diverge. Only rank 0 calls `on_save` and `on_step`
  hooks that write files.
- A second objective (sense-tuning): `loss_fn(batch) -> (loss, n_tokens)` stands in for `model.loss` (a loss
  adapter), `optimizer(model)` builds the optimizer in place of the default AdamW, and schedule="decay_from_start"
  runs the linear decay from step 0 with the warmup ramp multiplying it, instead of starting it when warmup ends.
- Resume: `state_dict()` holds weights, optimizer, step, tokens, training seconds, loss EMA,
  history, the torch RNG and (when the batch iterable has `state_dict`) its position; a trainer
  given that state continues exactly where the interrupted one stopped.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import asdict, dataclass
from typing import Callable, Iterator

import torch

from ..device import fast_bf16, resolve_device, to_device

log = logging.getLogger(__name__)


def dist_info() -> tuple[int, int]:
    """(rank, world size); (0, 1) outside torchrun."""
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return 0, 1


def init_distributed(device: str = "auto") -> tuple[int, int]:
    """Initialise torch.distributed when launched by torchrun (WORLD_SIZE > 1): gloo on CPU, nccl on CUDA."""
    import os

    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1 or not torch.distributed.is_available():
        return 0, 1
    if not torch.distributed.is_initialized():
        dev = resolve_device(device)
        backend = "nccl" if dev.type == "cuda" else "gloo"
        if dev.type == "cuda":
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
        torch.distributed.init_process_group(backend)
    return dist_info()


@dataclass
class TrainConfig:
    steps: int = 1000  # optimizer steps (the schedule's length)
    lr: float = 1e-3  # peak learning rate
    warmup: int = 100  # linear warmup steps
    min_lr_ratio: float = 0.1  # final lr as a share of the peak
    weight_decay: float = 0.01  # AdamW decay on matrices only
    clip: float = 1.0  # max grad norm (0 = off)
    amp: str = "auto"  # "auto": bf16 where it is native (CUDA, AVX512-BF16/AMX CPUs), else fp32; "bf16": always; "off"
    time_limit: float = 0.0  # seconds this process trains before it stops (0 = none); the schedule ignores it
    budget_s: float = 0.0  # total training seconds over all stretches (0 = none); the decay follows it too
    save_every: float = 0.0  # seconds between on_save calls (0 = only at the end)
    log_every: int = 100  # steps between log lines
    progress: bool = True  # tqdm bar on stderr

    def __post_init__(self):
        if self.steps <= 0 or self.lr <= 0:
            raise ValueError("steps and lr must be positive")
        if self.amp not in ("auto", "bf16", "off"):
            raise ValueError("amp must be auto, bf16 or off")
        if self.time_limit < 0 or self.budget_s < 0 or self.save_every < 0:
            raise ValueError("time_limit, budget_s and save_every must be >= 0")


SCHEDULES = ("warmup_then_decay", "decay_from_start")


class _LossModule(torch.nn.Module):
    """DDP wraps forward(); the models expose loss(batch), so forward calls it (or the trainer's loss_fn)."""

    def __init__(self, model, loss_fn=None):
        super().__init__()
        self.model, self.loss_fn = model, loss_fn

    def forward(self, batch):
        return self.model.loss(batch) if self.loss_fn is None else self.loss_fn(batch)


class Trainer:
    """Trains `model` on `batches`; hooks: callback(step, loss_ema, info) every step (the app's progress),
    on_step(trainer) every step on rank 0 (timeline recording), on_save(trainer) every `save_every`
    seconds and at the end on rank 0 (resumable checkpoints); loss_fn, optimizer and schedule as the module says."""

    def __init__(
        self,
        model: torch.nn.Module,
        batches: Iterator,
        cfg: TrainConfig,
        device: str = "auto",
        callback: Callable[[int, float, dict], None] | None = None,
        state: dict | None = None,
        on_step: Callable[["Trainer"], None] | None = None,
        on_save: Callable[["Trainer"], None] | None = None,
        loss_fn: Callable[[object], tuple] | None = None,
        optimizer: Callable[[torch.nn.Module], torch.optim.Optimizer] | None = None,
        schedule: str = "warmup_then_decay",
    ):
        if schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {', '.join(SCHEDULES)}; got {schedule!r}")
        self.model, self.batches, self.cfg, self.callback = model, batches, cfg, callback
        self.on_step, self.on_save = on_step, on_save
        self.loss_fn, self.make_optimizer, self.schedule = loss_fn, optimizer, schedule
        self.device = resolve_device(device)
        self.rank, self.world = dist_info()
        self.history: list[tuple[int, float]] = []
        self.step = 0
        self.tokens = 0
        self.trained_s = 0.0  # training seconds over all stretches
        self.ema: float | None = None
        self.opt = None
        self._resume = state
        self._interrupted = False
        self.rewarm_from: int | None = None  # a fresh optimizer joined a resumed run here: warm its lr up again

    # -- schedule ------------------------------------------------------------------------------
    def lr_at(self, step: int, trained_s: float | None = None) -> float:
        c = self.cfg
        from_start = self.schedule == "decay_from_start"
        if step < c.warmup and not from_start:
            return c.lr * (step + 1) / c.warmup
        frac = step / c.steps if from_start else (step - c.warmup) / max(1, c.steps - c.warmup)
        if c.budget_s:
            frac = max(frac, (self.trained_s if trained_s is None else trained_s) / c.budget_s)
        decay = c.min_lr_ratio + (1 - c.min_lr_ratio) * max(0.0, 1 - frac)
        lr = c.lr * min(1.0, (step + 1) / max(1, c.warmup)) * decay if from_start else c.lr * decay
        if self.rewarm_from is not None and 0 <= step - self.rewarm_from < c.warmup:
            # resumed from the weights alone: Adam's fresh moments make its first updates ~lr per parameter, so
            # the lr ramps up again over `warmup` steps instead of jumping in at the schedule's value
            lr *= (step - self.rewarm_from + 1) / c.warmup
        return lr

    def amp_used(self) -> bool:
        return self.cfg.amp == "bf16" or (self.cfg.amp == "auto" and fast_bf16(self.device))

    def _amp_ctx(self):
        if self.amp_used():
            return torch.autocast(self.device.type, dtype=torch.bfloat16)
        return torch.autocast(self.device.type, enabled=False)

    def _optimizer(self):
        decay, no_decay = [], []
        for n, p in self.model.named_parameters():
            if not p.requires_grad:
                continue
            (decay if p.dim() >= 2 and "emb" not in n else no_decay).append(p)
        groups = [{"params": decay, "weight_decay": self.cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
        # torch's fused kernel: one pass over all parameters, ~4x less time than the for-loop default on a CPU
        kw = {"fused": True} if self.device.type in ("cuda", "cpu") else {}
        return torch.optim.AdamW(groups, lr=self.cfg.lr, betas=(0.9, 0.98), eps=1e-6, **kw)

    # -- resumable state -----------------------------------------------------------------------
    def state_dict(self) -> dict:
        """Everything needed to continue this run exactly (call on every rank: it gathers the batch positions)."""
        pos = self.batches.state_dict() if hasattr(self.batches, "state_dict") else None
        if self.world > 1:
            every = [None] * self.world
            torch.distributed.all_gather_object(every, pos)
            pos = every
        else:
            pos = [pos]
        return {
            "model": {k: v.detach().cpu() for k, v in self.model.state_dict().items()},
            "optimizer": self.opt.state_dict() if self.opt is not None else None,
            "step": self.step,
            "tokens": self.tokens,
            "trained_s": self.trained_s,
            "ema": self.ema,
            "history": list(self.history),
            "torch_rng": torch.get_rng_state(),
            "batches": pos,
            "world": self.world,
            "train_config": asdict(self.cfg),
            "rewarm_from": self.rewarm_from,
        }

    def _load_state(self, s: dict):
        self.model.load_state_dict(s["model"])
        self.step, self.tokens, self.trained_s = int(s["step"]), int(s["tokens"]), float(s["trained_s"])
        self.ema = s.get("ema")
        self.rewarm_from = s.get("rewarm_from")
        if s.get("optimizer") is None and self.step > 0:  # the weights alone: a fresh optimizer starts here
            self.rewarm_from = self.step
        self.history = [tuple(h) for h in s.get("history", [])]
        if s.get("torch_rng") is not None:
            torch.set_rng_state(s["torch_rng"])
        pos = s.get("batches") or [None]
        if hasattr(self.batches, "load_state_dict") and pos[min(self.rank, len(pos) - 1)] is not None:
            if len(pos) != self.world:
                log.warning(
                    "resuming a %d-process run on %d processes: the data order restarts at an epoch start",
                    len(pos),
                    self.world,
                )
            else:
                self.batches.load_state_dict(pos[self.rank])

    # -- the loop --------------------------------------------------------------------------------
    def _prepare(self):
        """The model on its device (with the resumed state), the optimizer, and the module that computes the loss
        (wrapped in DDP under torchrun)."""
        model = self.model.to(self.device)
        model.train()
        if self._resume is not None:
            self._load_state(self._resume)
            model.to(self.device)
        self.opt = self._optimizer() if self.make_optimizer is None else self.make_optimizer(model)
        if self._resume is not None and self._resume.get("optimizer") is not None:
            self.opt.load_state_dict(self._resume["optimizer"])
        self._resume = None
        step_fn = _LossModule(model, self.loss_fn)
        if self.world > 1:
            from torch.nn.parallel import DistributedDataParallel as DDP

            ids = [self.device.index or 0] if self.device.type == "cuda" else None
            step_fn = DDP(step_fn, device_ids=ids, find_unused_parameters=getattr(model, "ddp_find_unused", False))
        return step_fn

    def _batches(self):
        while True:
            n = 0
            for batch in self.batches:  # a finite iterable (a list of batches) starts again
                n += 1
                yield to_device(batch, self.device)
            if n == 0:
                raise ValueError("the batch iterable is empty")

    def _optim_step(self, step_fn, batch) -> tuple[float, int, float]:
        lr = self.lr_at(self.step)
        for g in self.opt.param_groups:
            g["lr"] = lr
        with self._amp_ctx():
            loss, n_tok = step_fn(batch)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        if self.cfg.clip > 0:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.clip)
        self.opt.step()
        self.step += 1
        return float(loss.detach()), int(n_tok), lr

    def _agree(self, lv: float, n_tok: int, clock: "_Clock") -> tuple[float, int, float, float, bool]:
        """(mean loss, summed tokens, elapsed, seconds since the last save, stop requested), the same on every rank:
        the loss and tokens of all ranks, rank 0's clock (rank 0 alone runs the hooks, whose time is not training
        time), and whether any rank was asked to stop (SIGTERM / Ctrl-C)."""
        elapsed, since_save = clock.elapsed(), clock.since_save()
        if self.world == 1:
            return lv, n_tok, elapsed, since_save, self._interrupted
        mine = [elapsed, since_save] if self.rank == 0 else [0.0, 0.0]
        agg = torch.tensor([lv, float(n_tok), *mine, float(self._interrupted)], dtype=torch.float64)
        torch.distributed.all_reduce(agg)
        return float(agg[0]) / self.world, int(agg[1]), float(agg[2]), float(agg[3]), bool(agg[4] > 0)

    def _catch_signals(self):
        """SIGTERM and Ctrl-C end the run after the current step, so it is saved and can be resumed (main thread
        only; returns a function that puts the previous handlers back)."""
        import signal
        import threading

        self._interrupted = False
        if threading.current_thread() is not threading.main_thread():
            return lambda: None

        def handler(signum, frame):
            if self._interrupted:  # a second signal: stop at once
                raise KeyboardInterrupt
            self._interrupted = True
            log.warning(
                "signal %d: stopping after this step; the run will be saved (send it again to stop at once)", signum
            )

        old = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGINT)}
        return lambda: [signal.signal(sig, h) for sig, h in old.items()]

    def run(self) -> dict:
        c = self.cfg
        step_fn = self._prepare()
        bar = None
        if c.progress and self.rank == 0:
            from tqdm.auto import tqdm

            bar = tqdm(total=c.steps, initial=self.step, desc="train", unit="step", dynamic_ncols=True)
        clock = _Clock()
        base_s, tokens0 = self.trained_s, self.tokens
        batches = self._batches()
        restore = self._catch_signals()
        try:
            stopped_early = self._loop(step_fn, batches, clock, bar, base_s, tokens0)
        finally:
            restore()
        if bar is not None:
            bar.close()
        self.model.eval()
        self.finished = self.step >= c.steps or bool(c.budget_s and self.trained_s > c.budget_s)
        wall = self._agree(0.0, 0, clock)[2]
        return {
            "steps": self.step,
            "planned_steps": c.steps,
            "stopped_early": stopped_early,
            "finished": self.finished,
            "tokens_seen": self.tokens,
            "wall_s": round(self.trained_s, 1),
            "this_stretch_s": round(wall, 1),
            "tokens_per_s": round((self.tokens - tokens0) / max(wall, 1e-9), 1),
            "world_size": self.world,
            "device": str(self.device),
            "bf16": self.amp_used(),
            "final_loss": round(self.ema, 4) if self.ema is not None else None,
            "loss_history": [(s, round(v, 4)) for s, v in self.history],
            "train_config": asdict(c),
        }

    def _loop(self, step_fn, batches, clock: "_Clock", bar, base_s: float, tokens0: int) -> bool:
        """Steps until the plan, a time limit or a signal ends the stretch; True when it stopped early."""
        c = self.cfg
        while self.step < c.steps:
            lv, n_tok, lr = self._optim_step(step_fn, next(batches))
            lv, n_tok, elapsed, since_save, interrupted = self._agree(lv, n_tok, clock)
            self.tokens += n_tok
            self.trained_s = base_s + elapsed
            if not math.isfinite(lv):
                raise FloatingPointError(f"loss became {lv} at step {self.step}; lower the learning rate")
            self.ema = lv if self.ema is None else 0.98 * self.ema + 0.02 * lv
            tok_s = (self.tokens - tokens0) / max(elapsed, 1e-9)
            if self.step % c.log_every == 0 or self.step == c.steps:
                self.history.append((self.step, round(self.ema, 4)))
                if self.rank == 0:
                    log.info("step %d/%d loss %.4f lr %.2e tok/s %.0f", self.step, c.steps, self.ema, lr, tok_s)
            if bar is not None:
                bar.update(1)
                bar.set_postfix(loss=f"{self.ema:.3f}", tok_s=f"{tok_s:.0f}")
            if self.callback is not None:
                self.callback(self.step, self.ema, {"tokens": self.tokens, "elapsed": elapsed})
            if self.on_step is not None:
                clock.hook(self.on_step, self)
            if (c.budget_s and self.trained_s > c.budget_s) or (c.time_limit and elapsed > c.time_limit) or interrupted:
                return True
            if c.save_every and since_save > c.save_every and self.on_save is not None:
                clock.hook(self.on_save, self)
                clock.saved()
        return False


class _Clock:
    """Training time of this stretch: time spent in hooks (timeline snapshots, saves) is left out."""

    def __init__(self):
        self.t0 = self.last_save = time.time()

    def elapsed(self) -> float:
        return time.time() - self.t0

    def since_save(self) -> float:
        return time.time() - self.last_save

    def hook(self, fn, *args) -> None:
        t = time.time()
        fn(*args)
        self.t0 += time.time() - t

    def saved(self) -> None:
        self.last_save = time.time()

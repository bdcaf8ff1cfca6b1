"""A training run as the models' `train()` functions share it: what to run, and the folder it writes.

- `RunOptions`: the options of a resumable run that `train(..., **run_options)` of elmo, bert and gpt take (word2vec
  trains in one go and refuses them, as the CLI does).
- `RunSpec.make(...)`: the preset (a Preset or a name; its step plan optionally re-planned), seed, output folder and
  corpus of a new run, or, with `resume=DIR`, those of the run saved there (its preset looked up again by its
  recorded name) plus its weights, vocabulary and trainer state (`resume.load_state`; None falls back to the
  weights alone). With `init_from=DIR`, a new run (its own folder and
  corpus, e.g. a teacher's own text) that starts from DIR's weights, vocabulary, step count and timeline, with a fresh
  optimizer: continued pre-training, planned with `steps` beyond DIR's.
- `RunFolder`: the hooks a `Trainer` calls. Every save writes, from rank 0 only, a loadable checkpoint
  (config.json with the summary so far and the `run` record that --resume reads, vocab.json, model.pt), the
  timeline and resume.pt (unless the plan's `resume_file` is off); every step it records a timeline snapshot when one is due.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .. import checkpoint
from . import resume as rs
from .presets import Preset, resolve

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunOptions:
    """What `train(..., **run_options)` of elmo, bert and gpt take beyond the common arguments. resume: continue the
    run saved in that folder; stretch: stop this process after so many seconds of training (resumable); save_every:
    seconds between saves; amp: mixed precision (None = the preset's); steps: re-plan the optimizer steps; timeline:
    record the training timeline (where the preset does); init_from: a new run from that run folder's weights."""

    resume: str | Path | None = None
    stretch: float = 0.0
    save_every: float = 600.0
    amp: str | None = None
    steps: int | None = None
    timeline: bool = True
    init_from: str | Path | None = None

    ONE_GO = ("resume", "init_from", "stretch", "amp", "steps")  # what a kind that trains in one go refuses

    @classmethod
    def refuse(cls, kind: str, run_options: dict) -> None:
        """For a kind that trains in one go (word2vec): TypeError for an unknown option, ValueError for one that is
        set (the CLI refuses --resume, --init-from, --stretch, --amp and --steps for it the same way)."""
        cls(**run_options)
        given = [k for k in cls.ONE_GO if run_options.get(k)]
        if given:
            raise ValueError(f"{', '.join(given)}: for elmo, bert and gpt; {kind} trains in one go")


@dataclass
class RunSpec:
    kind: str
    plan: Preset  # the preset, its steps re-planned when asked
    seed: int
    out: Path
    corpus_path: str | None = None
    resumed: tuple | None = None  # (config.json, vocab.json, fp32 state dict) of the run being continued
    state: dict | None = None  # the Trainer state from resume.pt (None: weights alone)
    prev: dict = field(default_factory=dict)  # the summary saved so far
    preset_steps: int | None = None  # the preset's own step count (the command names --steps when the plan differs)
    init_from: str | None = None  # the run folder whose weights a continued run started from

    @property
    def preset(self) -> str:
        """The preset's name (the summary's "preset", the command's --preset)."""
        return self.plan.name

    @classmethod
    def make(
        cls,
        kind: str,
        preset: Preset | str,
        seed: int,
        out,
        resume=None,
        corpus_path=None,
        steps: int | None = None,
        init_from=None,
    ) -> "RunSpec":
        resumed = state = None
        prev: dict = {}
        if resume is not None and init_from is not None:
            raise ValueError(
                "resume and init_from exclude each other: resume continues a run in its own folder, "
                "init_from starts a new run from another run's weights"
            )
        source = resume if resume is not None else init_from
        if source is not None:
            run = rs.run_info(source)
            if run["kind"] != kind:
                raise ValueError(f"{source} holds a {run['kind']} run, not a {kind} run")
            preset, seed = run["preset"], run["seed"]
            if resume is not None:
                out = Path(resume)
                corpus_path = run.get("corpus") or corpus_path
                steps = steps or run.get("steps")
                init_from = run.get("init_from")  # a continued run keeps naming where it started
            resumed = checkpoint.load(source)
            state = rs.load_state(resume) if resume is not None else None
            prev = resumed[0].get("summary", {})
            if state is None:  # the weights alone: keep the step count (and so the schedule), fresh optimizer and order
                state = {
                    "model": resumed[2],
                    "step": int(prev.get("steps", 0)),
                    "tokens": int(prev.get("tokens_seen", 0)),
                    "trained_s": float(prev.get("wall_s", 0.0)),
                    "optimizer": None,
                    "batches": None,
                }
            if resume is None and (steps is None or steps <= state["step"]):
                raise ValueError(
                    f"init_from {source}: plan the continued run with steps beyond its {state['step']:,} "
                    f"steps (got {steps})"
                )
        preset = resolve(kind, preset)  # a resumed or continued run's by its recorded name
        out = Path(out) if out is not None else checkpoint.CHECKPOINT_DIR / kind
        return cls(
            kind,
            preset.replan(steps),
            seed,
            out,
            corpus_path,
            resumed,
            state,
            prev,
            preset.steps,
            None if init_from is None else str(init_from),
        )

    def run_record(self, world: int) -> dict:
        """What --resume needs to continue this run (stored as summary["run"])."""
        user = self.corpus_path is not None
        rec = {
            "preset": self.preset,
            "seed": self.seed,
            "world_size": world,
            "steps": self.plan.steps,
            "corpus": str(self.corpus_path) if user else None,
            "sources": f"user corpus {self.corpus_path}" if user else "pd+reviews+supplement (train split)",
        }
        if self.init_from is not None:
            rec["init_from"] = self.init_from
        return rec

    def command(self) -> str:
        if self.init_from is not None:  # the source run's own command comes first (its config.json names it)
            return (
                f"{checkpoint.rebuild_command(self.kind)} --init-from {self.init_from} --steps {self.plan.steps}"
                + (f" --corpus {self.corpus_path}" if self.corpus_path is not None else "")
                + " --out DIR"
            )
        replanned = self.preset_steps is not None and self.plan.steps != self.preset_steps
        return (
            f"{checkpoint.rebuild_command(self.kind)} --preset {self.preset} --seed {self.seed}"
            + (f" --steps {self.plan.steps}" if replanned else "")
            + (f" --corpus {self.corpus_path}" if self.corpus_path is not None else "")
        )


class RunFolder:
    """The Trainer hooks that keep `spec.out` a loadable, resumable checkpoint (written by rank 0 only).

    save_checkpoint(summary) writes config/vocab/weights; summary_extra(trainer) adds model-specific fields."""

    def __init__(
        self,
        spec: RunSpec,
        rank: int,
        world: int,
        save_checkpoint: Callable[[dict], None],
        summary_extra: Callable[[object], dict] = lambda tr: {},
        timeline=None,
    ):
        self.spec, self.rank, self.world = spec, rank, world
        self.save_checkpoint, self.summary_extra, self.timeline = save_checkpoint, summary_extra, timeline
        if timeline is not None and spec.resumed is not None:  # a continued run goes on with its source's timeline
            timeline.load_existing(
                spec.out if spec.init_from is None or spec.out.joinpath("timeline.json").is_file() else spec.init_from
            )

    def write(self, trainer, summary: dict) -> None:
        keep = self.spec.plan.resume_file
        state = trainer.state_dict() if keep else None  # on every rank: it gathers the ranks' data positions
        if self.rank != 0:
            return
        self.save_checkpoint(
            {
                **self.spec.prev,
                **summary,
                **self.summary_extra(trainer),
                "run": self.spec.run_record(self.world),
                "command": self.spec.command(),
            }
        )
        if self.timeline is not None:
            self.timeline.save(self.spec.out)
        if keep:
            rs.save_state(self.spec.out, state)

    def on_save(self, trainer) -> None:
        self.write(
            trainer,
            {
                "steps": trainer.step,
                "tokens_seen": trainer.tokens,
                "wall_s": round(trainer.trained_s, 1),
                "finished": False,
            },
        )

    def on_step(self, trainer, force: bool = False) -> None:
        if self.timeline is not None:
            self.timeline.maybe_record(trainer.step, trainer.tokens, trainer.trained_s, trainer.ema, force=force)

    def start(self) -> None:
        """The untrained model's snapshot (step 0) of a new run."""
        if self.timeline is not None and self.spec.state is None and self.spec.resumed is None:
            self.timeline.maybe_record(0, 0, 0.0, None)

    def hooks(self) -> dict:
        return {"on_step": self.on_step, "on_save": self.on_save}

    def finish(self, trainer, summary: dict) -> None:
        """The last snapshot (when the plan is done) and the final write; says how to continue otherwise."""
        if summary["finished"]:
            self.on_step(trainer, force=True)
        self.write(trainer, summary)
        if not summary["finished"] and self.rank == 0:
            log.info(
                "stopped at step %d of %d; continue with: %s --resume %s",
                trainer.step,
                self.spec.plan.steps,
                checkpoint.rebuild_command(self.spec.kind),
                self.spec.out,
            )

"""Typed views of what training and evaluation write to disk.

- `TrainingRecord`: the summary a training run stores in checkpoints/<model>/config.json (every model's
  trainer writes steps, tokens_seen, wall_s and device; the rest is model-specific and kept in `extra`).
- `EvalResult`: an eval_<task>.json file written by `python -m ctxlib eval` (ScalarMix probes and task models).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path


def sense_tune_of(summary: dict | None) -> dict | None:
    """The `sense_tune` record (ctxlib.training.sense_tune) of a checkpoint summary, or None for a model that was only
    pre-trained (or a summary that is not a dict)."""
    t = summary.get("sense_tune") if isinstance(summary, dict) else None
    return t if isinstance(t, dict) else None


# summary keys (after one level of flattening) that are held-out or training measures worth a table column
_MEASURE_HINTS = ("val", "ppl", "perplexity.f", "perplexity.b", "acc", "agree", "mlm", "nsp", "loss")


@dataclass
class TrainingRecord:
    steps: int | None = None
    tokens_seen: int | None = None
    wall_s: float | None = None
    device: str | None = None
    extra: dict = field(default_factory=dict)

    @classmethod
    def from_summary(cls, summary: dict | None) -> TrainingRecord:
        s = dict(summary or {})
        return cls(
            steps=s.pop("steps", None),
            tokens_seen=s.pop("tokens_seen", None),
            wall_s=s.pop("wall_s", None),
            device=s.pop("device", None),
            extra=s,
        )

    def measures(self, most: int = 4) -> dict[str, float]:
        """Up to `most` numeric measures (validation perplexity, MLM accuracy, POS agreement, final loss ...),
        nested dicts flattened one level ("perplexity.forward")."""
        flat = {}
        for k, v in self.extra.items():
            flat.update({f"{k}.{k2}": v2 for k2, v2 in v.items()} if isinstance(v, dict) else {k: v})
        found = {
            k: v
            for k, v in flat.items()
            if isinstance(v, (int, float))
            and not isinstance(v, bool)
            and any(x in k.lower() for x in _MEASURE_HINTS)
            and not k.rsplit(".", 1)[-1].startswith("n_")
        }  # a count (valid.n_chars) is not a measure
        return dict(list(found.items())[:most])


@dataclass
class EvalResult:
    """One task's evaluation of one model (see ctxlib.evaluation.task_eval.run_eval for how each figure is measured)."""

    task: str
    metric: str = "score"
    model: str = ""
    layer_names: list[str] = field(default_factory=list)
    score: float | None = None  # the ScalarMix task model's test score
    mix_weights: list[float] = field(default_factory=list)  # its softmax(s_j)
    gamma: float | None = None
    expected_layer: float | None = None  # sum_j j * s_j
    per_layer_score: list[float] = field(default_factory=list)  # a probe on each layer alone
    mix_probe_score: float | None = None  # a probe on the ScalarMix of all layers
    word2vec_probe_score: float | None = None  # the same probe on word2vec's type vectors
    baseline_score: float | None = None  # task model without contextual features
    word2vec_score: float | None = None  # task model with word2vec vectors
    input_score: float | None = None  # ELMo mixed into the task model's input
    concat_score: float | None = None  # ... and also concatenated to its hidden layer
    extra: dict = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: dict) -> EvalResult:
        d = dict(d)
        known = {k: d.pop(k) for k in list(d) if k in cls.__dataclass_fields__ and k != "extra"}
        known.setdefault("task", "")
        return cls(**known, extra=d)

    def to_dict(self) -> dict:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "extra"}
        return {**out, **self.extra}


def read_evals(path, tasks) -> tuple[dict[str, EvalResult], list[str]]:
    """({task: EvalResult} for the eval_<task>.json files in a checkpoint folder, [tasks without a file]).
    A corrupt file counts as missing."""
    found, missing = {}, []
    for task in tasks:
        try:
            d = json.loads((Path(path) / f"eval_{task}.json").read_text(encoding="utf-8")) if path else None
            found[task] = EvalResult.from_dict(d) if isinstance(d, dict) else None
        except (OSError, ValueError, TypeError):
            found[task] = None
        if found[task] is None:
            del found[task]
            missing.append(task)
    return found, missing

"""The Results page's verdict rule, in one place (ctxlib.results builds the claims' comparisons; this module judges
them).

One comparison ("measure") is "side `a`, the paper's winner, should be larger than side `b`", each side one figure
read from a named file (or a fixed number such as chance). Its outcome is one of:

- win: `a` leads `b` by at least the comparison's margin;
- loss: `b` leads `a` by at least the margin;
- tie: the difference is inside the margin, either way (the page's one definition of a tie; MARGIN for scores and
  shares, one layer for layer positions, none for a fixed threshold);
- missing: a figure could not be read ("not measured"; the comparison names the file and key).

A best layer is a set: every layer whose score is within MARGIN of the task's top score is tied for best
(`best_layers`). "`a`'s best layer is higher" wins only when the lowest of `a`'s tied-best layers is at least one
layer above the highest of `b`'s, loses when the reverse holds, and is a tie otherwise: the same best layer, or tied
sets that overlap or interleave, is a tie, and a tie is not a win.

The verdict of a claim (`verdict`): every measure wins -> reproduced; some win and none is missing -> partly; none
wins and none is missing -> not_reproduced; some figures missing -> incomplete (the page names them); every
figure missing -> missing.
"""

from __future__ import annotations

from dataclasses import dataclass

MARGIN = 0.01  # one point on a 0-1 score: a smaller difference is a tie
LAYER_MARGIN = 1  # best-layer comparisons: at least one layer apart
EPS = 1e-9  # float slack, so 0.81 - 0.80 counts as a full point
OUTCOMES = ("win", "tie", "loss", "missing")
VERDICTS = ("reproduced", "partly", "not_reproduced", "incomplete", "missing")


@dataclass
class Comparison:
    """`a` (the side the paper says is larger) against `b` on `measure` in `where` (keys the page translates).

    A value of None is a figure that could not be read. `a_source`/`b_source` say where each figure was read
    ("checkpoints/elmo/eval_pos.json#/score", a JSON pointer; "" for a fixed number). `a_range`/`b_range` (best-layer measures
    only) are the lowest and highest layer tied for best; the value is then the single top layer."""

    measure: str
    where: str
    a: str
    a_value: float | None
    b: str
    b_value: float | None
    margin: float = MARGIN
    a_source: str = ""
    b_source: str = ""
    a_range: tuple[int, int] | None = None
    b_range: tuple[int, int] | None = None

    @property
    def measured(self) -> bool:
        return self.a_value is not None and self.b_value is not None

    @property
    def diff(self) -> float | None:
        return self.a_value - self.b_value if self.measured else None

    @property
    def lead(self) -> tuple[float, float] | None:
        """(smallest, largest) lead of `a` over `b`: equal for single figures, spread for tied best layers."""
        if not self.measured:
            return None
        a_lo, a_hi = self.a_range or (self.a_value, self.a_value)
        b_lo, b_hi = self.b_range or (self.b_value, self.b_value)
        return a_lo - b_hi, a_hi - b_lo

    @property
    def outcome(self) -> str:
        if not self.measured:
            return "missing"
        lo, hi = self.lead
        if lo >= self.margin - EPS:
            return "win"
        if hi <= -self.margin + EPS:
            return "loss"
        return "tie"

    @property
    def holds(self) -> bool:
        return self.outcome == "win"

    def missing_sources(self) -> list[str]:
        """Where the figures that could not be read should have come from."""
        return [src for v, src in ((self.a_value, self.a_source), (self.b_value, self.b_source)) if v is None and src]


def verdict(comparisons: list[Comparison]) -> str:
    """reproduced (all win), partly (some win, none missing), not_reproduced (none wins, none missing),
    incomplete (some figures missing), missing (no figure at all)."""
    measured = [c for c in comparisons if c.measured]
    if not measured:
        return "missing"
    if len(measured) < len(comparisons):
        return "incomplete"
    wins = sum(c.holds for c in comparisons)
    return "reproduced" if wins == len(comparisons) else "partly" if wins else "not_reproduced"


def counts(comparisons: list[Comparison]) -> dict[str, int]:
    """How many comparisons end in each outcome (every key of OUTCOMES, zeros included)."""
    out = dict.fromkeys(OUTCOMES, 0)
    for c in comparisons:
        out[c.outcome] += 1
    return out


def best_layers(scores, margin: float = MARGIN) -> tuple[int, int, int] | None:
    """(top layer, lowest tied-best layer, highest tied-best layer) of per-layer scores; None without scores.
    A layer is tied for best when its score is less than `margin` below the top score."""
    if not isinstance(scores, list) or not scores or not all(isinstance(s, (int, float)) for s in scores):
        return None
    top = max(range(len(scores)), key=lambda j: scores[j])
    tied = [j for j, s in enumerate(scores) if scores[top] - s < margin - EPS]
    return top, min(tied), max(tied)

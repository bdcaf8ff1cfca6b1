"""How do a model's sense figures grow with training? The timeline's snapshots as a dose-response table, and a
log-linear fit of the best layer's pair ranking against tokens seen, extrapolated to the issue's targets.

    python bench/dose_response.py [CHECKPOINT_DIR ...] [--from-tokens 4e6] [--json]

Default: checkpoints/bert and checkpoints/elmo. Reads `timeline.json` (the example sets' figures at each
snapshot; the supplement and frozen sets are scored only on finished checkpoints, by `ctxlib eval --task senses`).

The fit is pair_ranking = a + b * log2(tokens) over the snapshots from `--from-tokens` on (before that the model
is still learning characters, not senses). It is an extrapolation from a handful of points, with the learning
rate's decay mixed in (a run's last snapshot sits at the end of its decay), not a promise: read "tokens to reach"
as an order of magnitude.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGETS = (0.85, 0.95)  # pair ranking: the target and goal


def rows(timeline: dict) -> list[dict]:
    out = []
    for s in timeline["snapshots"]:
        acc, pr = s.get("sense_accuracy_mean"), s.get("pair_ranking_mean")
        if not acc or not pr:
            continue
        la, lp = max(range(len(acc)), key=acc.__getitem__), max(range(len(pr)), key=pr.__getitem__)
        out.append(
            {
                "step": s["step"],
                "tokens": s["tokens"],
                "valid_loss": s.get("valid_loss"),
                "loo_best": acc[la],
                "loo_layer": la,
                "pr_best": pr[lp],
                "pr_layer": lp,
            }
        )
    return out


def fit(points: list[dict], from_tokens: float) -> dict | None:
    """Least squares of pr_best on log2(tokens) over the points with tokens >= from_tokens."""
    pts = [(math.log2(p["tokens"]), p["pr_best"]) for p in points if p["tokens"] >= from_tokens]
    if len(pts) < 3:
        return None
    n = len(pts)
    mx, my = sum(x for x, _ in pts) / n, sum(y for _, y in pts) / n
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    if sxx == 0:
        return None
    b = sum((x - mx) * (y - my) for x, y in pts) / sxx
    a = my - b * mx
    res = {"points": n, "per_doubling": round(b, 4), "intercept": round(a, 4)}
    for t in TARGETS:
        res[f"tokens_for_{t}"] = float(2 ** ((t - a) / b)) if b > 0 else None
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dirs", nargs="*", default=[str(ROOT / "checkpoints/bert"), str(ROOT / "checkpoints/elmo")])
    ap.add_argument("--from-tokens", type=float, default=4e6)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    report = {}
    for d in a.dirs:
        p = Path(d) / "timeline.json"
        try:
            tl = json.loads(p.read_text(encoding="utf-8"))
            pts = rows(tl)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            print(
                f"dose_response: cannot read {p} ({e.__class__.__name__}); give a checkpoint folder with a timeline",
                file=sys.stderr,
            )
            return 2
        report[d] = {"kind": tl.get("kind"), "rows": pts, "fit": fit(pts, a.from_tokens)}
    if a.json:
        print(json.dumps(report, ensure_ascii=False, indent=1))
        return 0
    for d, r in report.items():
        print(f"\n{d} ({r['kind']}): example sets, best layer")
        print(
            f"{'step':>7} {'tokens':>11} {'valid loss':>10} {'LOO':>6} {'(layer)':>7} {'pair rank':>9} {'(layer)':>7}"
        )
        for x in r["rows"]:
            vl = "" if x["valid_loss"] is None else f"{x['valid_loss']:.3f}"
            print(
                f"{x['step']:>7} {x['tokens']:>11,} {vl:>10} {x['loo_best']:>6.3f} {x['loo_layer']:>7} "
                f"{x['pr_best']:>9.3f} {x['pr_layer']:>7}"
            )
        f = r["fit"]
        if f is None:
            print("fit: fewer than 3 snapshots past --from-tokens")
            continue
        reach = ", ".join(
            f"{t}: ~{f[f'tokens_for_{t}'] / 1e6:,.0f} M tokens" if f[f"tokens_for_{t}"] else f"{t}: never"
            for t in TARGETS
        )
        print(
            f"fit over {f['points']} snapshots from {a.from_tokens / 1e6:g} M tokens: "
            f"{f['per_doubling']:+.3f} pair ranking per doubling of tokens; to reach {reach} (extrapolated)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

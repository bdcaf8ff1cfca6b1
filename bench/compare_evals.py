"""Is a retrain measurably better? Held-out figures of two checkpoints side by side, each difference with a paired
bootstrap 95% interval.

    python bench/compare_evals.py OLD_DIR NEW_DIR [--boot 2000] [--seed 0] [--json]

Reads each folder's eval_senses.json and eval_cloze.json (`python -m ctxlib eval DIR --task senses|cloze`).

- Sense sets: the unit is the word (12 / 49 / 10 words). A bootstrap sample draws words with replacement, the
  same words for both models, averages each layer's per-word figure and takes the best layer, as the eval does.
  So the interval also holds the choice of the best layer.
- Cloze: the unit is the sentence (130); the same sentences for both. Needs the per-item `ranks` that eval files
  written since this script have (rerun the cloze eval, ~30 s, for an older file).

A difference whose interval holds 0 is not measurable on these sets. The sets are small, so only large
differences are: see the widths printed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

SETS = ("examples", "supplement", "frozen")


def _per_word(s: dict, key: str) -> np.ndarray:
    pw = s["per_word"]
    return np.array([pw[w][key] for w in sorted(pw)], dtype=float)  # (words, layers)


def _interval(x: np.ndarray) -> list[float]:
    return [round(float(np.percentile(x, 2.5)), 4), round(float(np.percentile(x, 97.5)), 4)]


def senses(old: dict, new: dict, boot: int, rng: np.random.Generator) -> list[dict]:
    """Per set and measure (best-layer LOO accuracy, best-layer pair ranking): old, new, new - old with its interval."""
    rows = []
    for name in SETS:
        if name not in old.get("sets", {}) or name not in new.get("sets", {}):
            continue
        a_set, b_set = old["sets"][name], new["sets"][name]
        if sorted(a_set["per_word"]) != sorted(b_set["per_word"]):
            raise ValueError(f"the {name} sets hold different words; evaluate both with the same code")
        for key, label in (("accuracy", "LOO accuracy"), ("pair_ranking", "pair ranking")):
            a, b = _per_word(a_set, key), _per_word(b_set, key)
            idx = rng.integers(0, len(a), size=(boot, len(a)))
            da = a[idx].mean(axis=1).max(axis=1)  # (boot,): best layer of each resample
            db = b[idx].mean(axis=1).max(axis=1)
            point_a, point_b = float(a.mean(0).max()), float(b.mean(0).max())
            rows.append(
                {
                    "set": name,
                    "measure": label,
                    "words": len(a),
                    "old": round(point_a, 4),
                    "new": round(point_b, 4),
                    "diff": round(point_b - point_a, 4),
                    "ci": _interval(db - da),
                    "old_ci": _interval(da),
                    "new_ci": _interval(db),
                }
            )
    return rows


def cloze(old: dict, new: dict, boot: int, rng: np.random.Generator) -> list[dict]:
    """Top-1 and top-5 on the cloze set, paired over sentences."""
    if "ranks" not in old or "ranks" not in new:
        raise ValueError("an eval_cloze.json has no per-item ranks; rerun: python -m ctxlib eval DIR --task cloze")
    a, b = np.array(old["ranks"]), np.array(new["ranks"])
    if len(a) != len(b):
        raise ValueError("the two cloze files cover different sentences; evaluate both with the same code")
    idx = rng.integers(0, len(a), size=(boot, len(a)))
    rows = []
    for k, label in ((1, "top-1"), (5, "top-5")):
        ha, hb = ((a >= 1) & (a <= k)).astype(float), ((b >= 1) & (b <= k)).astype(float)
        da, db = ha[idx].mean(1), hb[idx].mean(1)
        rows.append(
            {
                "set": "cloze",
                "measure": label,
                "words": len(a),
                "old": round(float(ha.mean()), 4),
                "new": round(float(hb.mean()), 4),
                "diff": round(float(hb.mean() - ha.mean()), 4),
                "ci": _interval(db - da),
                "old_ci": _interval(da),
                "new_ci": _interval(db),
            }
        )
    return rows


def compare(old_dir, new_dir, boot: int = 2000, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    rows = []
    for fname, fn in (("eval_senses.json", senses), ("eval_cloze.json", cloze)):
        pa, pb = Path(old_dir) / fname, Path(new_dir) / fname
        if pa.is_file() and pb.is_file():
            rows += fn(
                json.loads(pa.read_text(encoding="utf-8")), json.loads(pb.read_text(encoding="utf-8")), boot, rng
            )
    if not rows:
        raise ValueError(f"neither folder pair has eval_senses.json or eval_cloze.json: {old_dir}, {new_dir}")
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--boot", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    try:
        rows = compare(a.old, a.new, a.boot, a.seed)
    except (ValueError, KeyError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if a.json:
        print(json.dumps(rows, ensure_ascii=False))
        return 0
    print(f"{'set':<11}{'measure':<15}{'n':>4}{'old':>8}{'new':>8}{'new-old':>9}  95% interval    verdict")
    for r in rows:
        lo, hi = r["ci"]
        verdict = "better" if lo > 0 else "worse" if hi < 0 else "not measurable"
        print(
            f"{r['set']:<11}{r['measure']:<15}{r['words']:>4}{r['old']:>8.3f}{r['new']:>8.3f}{r['diff']:>+9.3f}"
            f"  [{lo:+.3f}, {hi:+.3f}]  {verdict}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Word-centering: do two tokens of a word look more alike in sense once the word's average is taken out?

    python bench/word_centering.py [CHECKPOINT ...] [--cap 200] [--sets examples,supplement,frozen] [--json]

For each sense set of the models issue, per layer, leave-one-out accuracy and pair ranking on the raw token vectors
and on the word-centered ones: each token vector minus the word's mean token vector over at most `--cap` of its
train-split occurrences (`ctxlib.evaluation.heldout.type_mean`; no sense label is read). Raw cosine between two
tokens of 苹果 is dominated by what every 苹果 shares; centering compares what the two contexts added.
The method (and nothing else: no cap, no layer) was chosen on the supplement's *train* split (a half to fit the
mean, the other half to score), never on the three sets printed here. Default: checkpoints/bert.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", nargs="*", default=[str(ROOT / "checkpoints/bert")])
    ap.add_argument("--cap", type=int, default=200, help="occurrences per word for its mean (default 200)")
    ap.add_argument("--sets", default="examples,supplement,frozen")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    import ctxlib
    from ctxlib.evaluation.heldout import SENSE_SETS, sense_scores

    sets = [s.strip() for s in a.sets.split(",") if s.strip()]
    if not sets or any(s not in SENSE_SETS for s in sets) or a.cap < 1:
        print(
            f"word_centering: --sets takes a comma list of {', '.join(SENSE_SETS)} and --cap a positive number",
            file=sys.stderr,
        )
        return 2
    report = {}
    for m in a.models:
        try:
            enc = ctxlib.load(m)
        except Exception as e:  # noqa: BLE001 - any unreadable checkpoint: one line, exit 2
            print(f"word_centering: cannot load {m}: {e}", file=sys.stderr)
            return 2
        t0 = time.time()
        report[m] = {"kind": enc.kind, "layers": list(enc.layer_names), "sets": {}}
        for s in sets:
            raw, cen = sense_scores(enc, s), sense_scores(enc, s, center=True, cap=a.cap)
            report[m]["sets"][s] = {
                "raw": {k: raw[k] for k in ("accuracy", "pair_ranking")},
                "centered": {k: cen[k] for k in ("accuracy", "pair_ranking")},
                "type_occurrences": {w: v["type_occurrences"] for w, v in cen["per_word"].items()},
            }
        report[m]["seconds"] = round(time.time() - t0, 1)
    if a.json:
        print(json.dumps(report, ensure_ascii=False, indent=1))
        return 0
    for m, r in report.items():
        print(f"\n{m} ({r['kind']}; layers {', '.join(r['layers'])}; {r['seconds']:.0f} s)")
        for s, v in r["sets"].items():
            occ = sorted(v["type_occurrences"].values())
            print(f"  {s} (occurrences per word for the mean: min {occ[0]}, median {occ[len(occ) // 2]})")
            for how in ("raw", "centered"):
                pr, acc = v[how]["pair_ranking"], v[how]["accuracy"]
                print(
                    f"    {how:8s} pair ranking {' '.join(f'{x:.3f}' for x in pr)} (best {max(pr):.3f})   "
                    f"LOO {' '.join(f'{x:.3f}' for x in acc)} (best {max(acc):.3f})"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())

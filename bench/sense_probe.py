"""Is the sense in the vector even where cosine does not show it? A per-word linear probe, per layer.

    python bench/sense_probe.py [CHECKPOINT ...] [--json]

For each word of the teaching supplement: a logistic-regression probe (standardised features, C=1) trained on the
token vectors of its *train* split, with their sense labels, and scored on its held-out part (valid + test, the
models issue's "supplement" set); beside it, the same held-out sentences' pair ranking (cosine, no training) and
the majority-sense rate. Means over words, per layer. Default: checkpoints/bert and checkpoints/elmo.
A probe reads any direction of the vector; cosine weighs all directions alike, so the gap between the two is the
sense information that is present but not what the vectors mostly encode.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def scores(enc) -> dict:
    from ctxlib import supplement
    from ctxlib.analysis import pair_ranking, probe_accuracy

    tr, te = defaultdict(list), defaultdict(list)
    for r in supplement.load():
        (tr if r.split == "train" else te)[r.word].append((r.sentence, r.sense))
    probe, pr, major = [], [], []
    for w in sorted(te):
        ytr, yte = [s for _, s in tr[w]], [s for _, s in te[w]]
        if len(set(yte)) < 2 or len(set(ytr)) < 2:
            continue
        Xtr = enc.word_vectors([t for t, _ in tr[w]], w)
        Xte = enc.word_vectors([t for t, _ in te[w]], w)
        probe.append([probe_accuracy(Xtr[:, j], ytr, Xte[:, j], yte) for j in range(Xtr.shape[1])])
        pr.append([pair_ranking(Xte[:, j], yte) for j in range(Xte.shape[1])])
        top = Counter(ytr).most_common(1)[0][0]
        major.append(float(np.mean([y == top for y in yte])))
    return {
        "words": len(probe),
        "probe_accuracy": [round(float(x), 4) for x in np.mean(probe, 0)],
        "pair_ranking": [round(float(x), 4) for x in np.mean(pr, 0)],
        "majority": round(float(np.mean(major)), 4),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", nargs="*", default=[str(ROOT / "checkpoints/bert"), str(ROOT / "checkpoints/elmo")])
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    import ctxlib

    report = {}
    for m in a.models:
        try:
            enc = ctxlib.load(m)
        except Exception as e:  # noqa: BLE001 - any unreadable checkpoint: one line, exit 2
            print(f"sense_probe: cannot load {m}: {e}", file=sys.stderr)
            return 2
        t0 = time.time()
        report[m] = {
            "kind": enc.kind,
            "layers": list(enc.layer_names),
            **scores(enc),
            "seconds": round(time.time() - t0, 1),
        }
    if a.json:
        print(json.dumps(report, ensure_ascii=False, indent=1))
        return 0
    for m, r in report.items():
        print(
            f"\n{m} ({r['kind']}; {r['words']} supplement words, held-out part; majority sense {r['majority']:.3f}; "
            f"{r['seconds']:.0f} s)"
        )
        for name, p, c in zip(r["layers"], r["probe_accuracy"], r["pair_ranking"]):
            print(f"  {name:28s} probe {p:.3f}   pair ranking {c:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

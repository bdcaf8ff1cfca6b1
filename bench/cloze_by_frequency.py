"""Why the cloze test is far from its target: a BERT's cloze hits grouped by how often the hidden character, with
its neighbour, occurs in the training text.

    python bench/cloze_by_frequency.py [CHECKPOINT_DIR ...] [--json]

Default: checkpoints/bert. Reads each folder's `eval_cloze.json` (written by `python -m ctxlib eval DIR --task
cloze`: the answer's rank in the top 5 for every sentence of the frozen cloze set) and counts, in the training split
of all sources, the two-character strings the answer forms with the character before and after the gap (the larger
count is the item's "seen"; 我今天很高[MASK] counts 高兴). The buckets are decades of that count.

Measured on the shipped BERT (session 14): 18 of 130 items seen fewer than 10 times, top-1 0.000 (top-5 0.000);
61 seen 10-99 times, 0.262 (0.508); 48 seen 100-999 times, 0.562 (0.833); 3 seen 1,000+ times, 0.667 (1.000). The
pre-trained BERT before sense-tuning: 0.000 / 0.311 / 0.604 / 0.667. Even the well-seen items reach only about
0.6 top-1, and 79 of the 130 sit where the 2.7 M training characters hold fewer than 100 examples of the word: the
0.70 target needs an everyday corpus one to two orders of magnitude larger, which more passes over the same text do
not replace (docs/experiments.md, "More compute on the same text").
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

EDGES = (10, 100, 1000)  # bucket edges of the count


def seen(text: str, sentence: str, answer: str) -> int:
    """The larger training count of answer's two-character strings with its neighbours in `sentence` (one [MASK])."""
    i = sentence.index("[MASK]")
    left, right = sentence[i - 1 : i], sentence[i + 6 : i + 7]
    # isalnum() is False for "", whitespace and punctuation, which count nothing
    return max(text.count(left + answer) if left.isalnum() else 0, text.count(answer + right) if right.isalnum() else 0)


def bucket_name(count: int) -> str:
    lo = 0
    for hi in EDGES:
        if count < hi:
            return f"{lo:,}-{hi - 1:,}"
        lo = hi
    return f"{lo:,}+"


def buckets(counts: list[int], ranks: list[int]) -> list[dict]:
    """Per bucket, in order: n, top-1 and top-5 share (rank 1; rank 1-5, 0 meaning not in the top 5)."""
    out = {bucket_name(b): [] for b in (0, *EDGES)}
    for c, r in zip(counts, ranks, strict=True):
        out[bucket_name(c)].append(r)
    return [
        {
            "seen": k,
            "n": len(v),
            "top1": round(sum(r == 1 for r in v) / len(v), 3) if v else None,
            "top5": round(sum(r > 0 for r in v) / len(v), 3) if v else None,
        }
        for k, v in out.items()
    ]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dirs", nargs="*", default=[str(ROOT / "checkpoints/bert")])
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    from ctxlib import corpus
    from ctxlib.evaluation.heldout import cloze_items

    items = cloze_items()
    results = {}
    for d in a.dirs:
        p = Path(d) / "eval_cloze.json"
        try:
            ranks = json.loads(p.read_text(encoding="utf-8"))["ranks"]
            if len(ranks) != len(items) or not all(isinstance(r, int) and 0 <= r <= 5 for r in ranks):
                raise ValueError("its ranks do not match the cloze set")
        except (OSError, ValueError, KeyError, TypeError) as e:
            print(
                f"cloze_by_frequency: cannot use {p} ({e}); run: python -m ctxlib eval {d} --task cloze",
                file=sys.stderr,
            )
            return 2
        results[d] = ranks
    text = "\n".join(p.text for p in corpus.load("all", "train"))
    counts = [seen(text, s, ans) for s, ans, _ in items]
    report = {d: buckets(counts, r) for d, r in results.items()}
    if a.json:
        print(json.dumps({"train_chars": len(text), "counts": counts, "buckets": report}, ensure_ascii=False, indent=1))
        return 0
    print(f"training text: {len(text):,} characters; cloze items: {len(items)}")
    for d, rows in report.items():
        print(f"\n{d}\n{'seen in training':>17} {'n':>4} {'top-1':>6} {'top-5':>6}")
        for r in rows:
            t1, t5 = ("-", "-") if r["n"] == 0 else (f"{r['top1']:.3f}", f"{r['top5']:.3f}")
            print(f"{r['seen']:>17} {r['n']:>4} {t1:>6} {t5:>6}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

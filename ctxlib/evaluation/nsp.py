"""What BERT's next-sentence head learned: topic or order? Measured on held-out sentence pairs.

Devlin et al. (2019) train NSP with a true next sentence (IsNext) against a sentence from another document
(NotNext). A random sentence usually changes the topic, so the head can succeed by spotting topic alone.
Lan et al. (2020, ALBERT) argued it does, and replaced NSP by sentence-order prediction (negatives: the same two
sentences swapped); Liu et al. (2019, RoBERTa) dropped NSP altogether. The test here asks the head three
questions about each held-out pair of consecutive sentences (A, B) of a corpus document:

- (A, B): the true order, what the head was trained to call IsNext;
- (B, A): the same two sentences swapped: same topic, wrong order;
- (A, R): R a sentence from another document of the same source: what it was trained to call NotNext.

If the head learned order, P(IsNext) of (B, A) is low; if it learned topic, (B, A) scores like (A, B).
`order_share` = (P(B,A) - P(A,R)) / (P(A,B) - P(A,R)) is the part of the topic gap that swapping leaves:
near 1, order counts for nothing; near 0, a swapped pair is as unlikely as a random one.

`python -m ctxlib eval bert --task nsp` writes eval_nsp.json.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

ORDERS = ("true", "swapped", "random")  # the table's rows: (A, B), (B, A), (A, R)
MIN_CHARS = 4  # shorter "sentences" (一、 headings, 好！) say little about topic or order


def heldout_pairs(paragraphs, n: int = 300, seed: int = 0, max_chars: int = 120) -> list[dict]:
    """Up to `n` held-out triples {"a", "b", "r", "source"}: a and b consecutive sentences (split after 。！？) of one
    paragraph, r a sentence of another paragraph of the same source, each at least MIN_CHARS characters and
    len(a) + len(b) <= max_chars (so nothing is truncated), one triple per paragraph, chosen with `seed`."""
    rng = np.random.default_rng(seed)

    def sents(p) -> list[str]:
        out = ["".join(p.words[i:j]).strip() for i, j in p.sentences()]
        return [s for s in out if len(s) >= MIN_CHARS]

    by_source: dict[str, list[int]] = {}
    split = [sents(p) for p in paragraphs]
    for i, p in enumerate(paragraphs):
        if split[i]:
            by_source.setdefault(p.source, []).append(i)
    cands = [
        i
        for i, ss in enumerate(split)
        if any(len(x) + len(y) <= max_chars for x, y in zip(ss, ss[1:])) and len(by_source[paragraphs[i].source]) >= 2
    ]
    out = []
    for i in rng.permutation(len(cands))[:n] if cands else []:
        pi = cands[int(i)]
        ss = split[pi]
        k = [j for j in range(len(ss) - 1) if len(ss[j]) + len(ss[j + 1]) <= max_chars]
        j = k[int(rng.integers(len(k)))]
        a, b = ss[j], ss[j + 1]
        pool = by_source[paragraphs[pi].source]
        for _ in range(100):  # a sentence of another paragraph that fits beside a
            other = pool[int(rng.integers(len(pool)))]
            fits = [s for s in split[other] if len(a) + len(s) <= max_chars]
            if other != pi and fits:
                out.append({"a": a, "b": b, "r": fits[int(rng.integers(len(fits)))], "source": paragraphs[pi].source})
                break
    return out


def nsp_table(enc, triples: list[dict]) -> dict:
    """P(IsNext) of each triple's (A, B), (B, A) and (A, R) by `enc.next_sentence`: per order the mean, the share
    above 0.5 and the share of pairs where it is below the true order's; plus `order_share` (module docstring)."""
    if not triples:
        raise ValueError("no sentence pairs to test")
    if not hasattr(enc, "next_sentence"):
        raise ValueError(f"model '{enc.name}' is a {enc.kind} model; the NSP test needs BERT's next-sentence head")
    p = {
        o: np.array(
            [
                enc.next_sentence(*pair)
                for pair in (
                    [(t["a"], t["b"]) for t in triples]
                    if o == "true"
                    else [(t["b"], t["a"]) for t in triples]
                    if o == "swapped"
                    else [(t["a"], t["r"]) for t in triples]
                )
            ]
        )
        for o in ORDERS
    }
    rows = {
        o: {
            "mean_p": round(float(p[o].mean()), 4),
            "share_is_next": round(float((p[o] > 0.5).mean()), 4),
            "share_below_true": round(float((p[o] < p["true"]).mean()), 4),
        }
        for o in ORDERS
    }
    gap = float(p["true"].mean() - p["random"].mean())
    share = (float(p["swapped"].mean() - p["random"].mean()) / gap) if abs(gap) > 1e-9 else None
    return {
        "n": len(triples),
        "rows": rows,
        "order_share": None if share is None else round(share, 4),
        "sources": {s: sum(t["source"] == s for t in triples) for s in sorted({t["source"] for t in triples})},
        "examples": [{**t, **{f"p_{o}": round(float(p[o][i]), 4) for o in ORDERS}} for i, t in enumerate(triples[:8])],
    }


def run_eval(model_name, task: str = "nsp", out=None, seed: int = 0, n: int = 300, **_) -> dict:
    """`python -m ctxlib eval bert --task nsp`: the table on `n` triples of the corpora's valid split, written to
    eval_nsp.json in the checkpoint folder (or `out`)."""
    from .. import checkpoint, corpus
    from ..encoder import load

    t0 = time.time()
    enc = load(model_name)
    triples = heldout_pairs(corpus.load("corpora", "valid"), n=n, seed=seed, max_chars=enc.max_len - 3)
    result = {
        "task": "nsp",
        "model": enc.name,
        "kind": enc.kind,
        "split": "valid",
        "seed": seed,
        **nsp_table(enc, triples),
        "seconds": round(time.time() - t0, 1),
        "command": f"python -m ctxlib eval {model_name} --task nsp --seed {seed}",
    }
    checkpoint.atomic_write_json(Path(out) if out else Path(enc.path) / "eval_nsp.json", result)
    return result


def read_table(folder) -> dict | None:
    """The eval_nsp.json of a checkpoint folder, or None when it is missing or unreadable."""
    import json

    try:
        d = json.loads((Path(folder) / "eval_nsp.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return (
        d if isinstance(d, dict) and isinstance(d.get("rows"), dict) and all(o in d["rows"] for o in ORDERS) else None
    )

"""The dev split that chose sense-tune's length and learning rate: leave 12 of the supplement's words out of the
tune and score those words' *train* sentences, i.e. words the tune never saw, so no held-out set is looked at.

    python bench/sense_tune_dev.py PRE_TRAINED_DIR --steps 1500 [--lr 2e-4] [--lm-weight 1] [--out DIR] [--json]
    python bench/sense_tune_dev.py PRE_TRAINED_DIR --steps 0      # the same words before any tune
    python bench/sense_tune_dev.py PRE_TRAINED_DIR --steps 600 --train-words 9   # tune on 9 words only

The 12 words are a fixed draw (numpy seed 123) from the supplement's sorted word list. Prints pair ranking and
leave-one-out accuracy per layer on them, and the tuned model's held-out MLM figures or perplexity. Measured here
(one thread): BERT 0.735 (no tune), 0.777 (600 steps), 0.787 (1,500), 0.779 (3,000); ELMo 0.646, 0.696 (600 steps, lr 5e-4).
`--train-words N` tunes on only N of the other 37 words: BERT at 600 steps 0.775 (9 words), 0.777 (18), 0.777 (37).
`--layers 4 3 2 1` (the loss on every BERT layer), 1,500 steps: 0.783 (the top two: 0.787).
ELMo at lr 5e-4: 0.712 at 1,500 steps (perplexity 154.4 / 154.2; taken), 0.705 at 3,000 (150.4 / 150.1).
Session 14, 1,500 steps: BERT --tau 0.05 0.789, --tau 0.2 0.781, --words 8 0.789 (tau 0.1, 4 words: 0.787);
ELMo --tau 0.05 0.713 (0.712). Flat: the temperature and words per step are not levers either.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DEV_WORDS = 12
DEV_SEED = 123


def dev_words() -> list[str]:
    from ctxlib import supplement

    words = sorted({r.word for r in supplement.load()})
    return sorted(np.random.default_rng(DEV_SEED).permutation(words)[:DEV_WORDS].tolist())


def left_out(dev: list[str], keep: int | None) -> list[str]:
    """The tune words beyond the first `keep` of a fixed draw (none when keep is None)."""
    from ctxlib.supplement import train_senses

    if keep is None:
        return []
    rest = sorted(w for w in train_senses() if w not in dev)
    if not 1 <= keep <= len(rest):
        raise ValueError(f"--train-words must be 1..{len(rest)}")
    return sorted(np.random.default_rng(DEV_SEED + 1).permutation(rest)[keep:].tolist())


def score(enc, words) -> dict:
    from ctxlib.analysis import loo_centroid_accuracy, pair_ranking
    from ctxlib.supplement import train_senses

    by_word = train_senses()
    pr, acc = [], []
    for w in words:
        if w not in by_word:  # fewer than two senses in the train split
            continue
        items = [(t, s) for s, ts in by_word[w].items() for t in ts]
        y = [s for _, s in items]
        V = enc.word_vectors([t for t, _ in items], w)
        pr.append([pair_ranking(V[:, j], y) for j in range(V.shape[1])])
        acc.append([loo_centroid_accuracy(V[:, j], y) for j in range(V.shape[1])])
    return {
        "words": len(pr),
        "pair_ranking": np.round(np.mean(pr, 0), 4).tolist(),
        "accuracy": np.round(np.mean(acc, 0), 4).tolist(),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model", help="a pre-trained (not sense-tuned) BERT or ELMo checkpoint folder")
    ap.add_argument("--steps", type=int, required=True, help="0: score the model as it is")
    ap.add_argument("--lr", type=float, default=None, help="peak learning rate (default: the command's, per kind)")
    ap.add_argument("--lm-weight", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--tau", type=float, default=None, help="temperature of the contrastive loss (default: the command's)"
    )
    ap.add_argument(
        "--layers", type=int, nargs="+", default=None, help="layers the loss reads, from the top (1 = last)"
    )
    ap.add_argument("--words", type=int, default=None, help="words per step (default: the command's)")
    ap.add_argument(
        "--train-words",
        type=int,
        default=None,
        help="tune on only this many of the other words (a fixed draw, numpy seed DEV_SEED+1): how the "
        "transfer to unseen words grows with the number of words tuned on",
    )
    ap.add_argument("--out", default=None, help="keep the tuned checkpoint here (default: a temporary folder)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    import ctxlib
    from ctxlib import checkpoint
    from ctxlib.training.sense_tune import SENSE_TUNE_LR, SenseTuneConfig, sense_tune

    if a.steps < 0 or (a.lr is not None and not a.lr > 0):
        print("sense_tune_dev: --steps must be 0 or more and --lr positive", file=sys.stderr)
        return 2
    try:
        kind = checkpoint.read_config(a.model).get("kind")
        if kind not in SENSE_TUNE_LR:
            raise ValueError(f"{a.model} holds a {kind} model; the dev split is for BERT and ELMo")
        words = dev_words()
        out = Path(a.model)
        if a.steps:
            out = Path(a.out or tempfile.mkdtemp(prefix="sense-tune-dev-"))
            extra = {k: v for k, v in (("tau", a.tau), ("layers", tuple(a.layers or ())), ("words", a.words)) if v}
            cfg = SenseTuneConfig(steps=a.steps, lr=a.lr or SENSE_TUNE_LR[kind], mlm_weight=a.lm_weight, **extra)
            sense_tune(a.model, out, cfg, seed=a.seed, exclude=words + left_out(words, a.train_words))
        enc = ctxlib.load(str(out))
    except (checkpoint.CheckpointError, ValueError, OSError) as e:
        print(f"sense_tune_dev: {' '.join(str(e).splitlines())}", file=sys.stderr)
        return 2
    s = enc.summary
    report = {
        "model": a.model,
        "steps": a.steps,
        "lr": a.lr,
        "lm_weight": a.lm_weight,
        "dev_words": words,
        "train_words": a.train_words,
        "tau": a.tau,
        "layers": a.layers,
        "words_per_step": a.words,
        **score(enc, words),
        "held_out": s.get("valid") or s.get("perplexity"),
    }
    if a.json:
        print(json.dumps(report, ensure_ascii=False, indent=1))
    else:
        print(f"{a.model} steps {a.steps}: dev words {' '.join(words)}")
        print(
            f"  pair ranking per layer {report['pair_ranking']}, LOO {report['accuracy']}; held out {report['held_out']}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

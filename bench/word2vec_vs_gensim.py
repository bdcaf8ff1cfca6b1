"""ctxlib's word2vec against gensim 4.4 on the same corpus with the same hyperparameters, in one run.

Corpus: the train split of both sources (People's Daily + reviews), `ctxlib.corpus.sentences("all", "train")`,
the same list of word lists for both. Hyperparameters (shared): sg, dim, window, negative, sample, min_count,
epochs, alpha/min_alpha = lr/min_lr, ns_exponent 0.75, cbow_mean=1, seed 0. gensim runs with workers=2;
ctxlib with workers=2 (two Hogwild threads, each running single-threaded torch ops: the same two cores).

Speed: words/s = raw corpus words x epochs / wall time of the whole call (vocabulary building included, for both).
The CPU seconds of each call (all threads) are printed too: on a shared machine they show the work done,
independent of how much of the CPU the other processes left.
Quality: POS agreement@10. Each People's Daily word's tag is its most frequent gold POS tag over all of PD.
For the 2,000 most frequent PD words that are in the model's vocabulary, take the 10 nearest neighbours by cosine
over the model's FULL vocabulary (the word itself excluded); the score is the share of neighbours whose tag equals
the word's own. Neighbours without a PD tag (e.g. review-only words) count as disagreeing.

    .venv/bin/python bench/word2vec_vs_gensim.py [--epochs 5] [--quick]

The last output line is one JSON object with ctxlib_words_per_s, gensim_words_per_s, speed_ratio,
ctxlib_pos_agreement, gensim_pos_agreement. The CPU is shared: the load average is printed around each run.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ctxlib import corpus  # noqa: E402
from ctxlib.models.word2vec import Word2VecConfig  # noqa: E402
from ctxlib.training.word2vec import PRESETS, fit, pd_major_tags, pos_agreement  # noqa: E402

WORDS = ("中国", "苹果", "发展", "酒店", "好")


def load() -> str:
    return "load average %.2f %.2f %.2f" % os.getloadavg()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="every 5th sentence and 1 epoch (a smoke test, ~1 min)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--cbow", action="store_true", help="CBOW instead of skip-gram")
    ap.add_argument("--batch-size", type=int, default=None, help="ctxlib windows per SGD step (default: the preset's)")
    ap.add_argument("--max-row-updates", type=int, default=None, help="ctxlib's per-row update cap (default: the preset's)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    from gensim.models import Word2Vec

    sents = corpus.sentences("all", "train")
    epochs = args.epochs
    if args.quick:
        sents, epochs = sents[::5], 1
    raw = sum(len(s) for s in sents)
    base = Word2VecConfig(**PRESETS["default"].model)
    cfg = Word2VecConfig(sg=not args.cbow, dim=base.dim, window=base.window, negative=base.negative, sample=base.sample,
                         min_count=base.min_count, epochs=epochs, lr=base.lr, min_lr=base.min_lr, seed=0, max_vocab=0,
                         batch_size=args.batch_size or base.batch_size,
                         max_row_updates=base.max_row_updates if args.max_row_updates is None else args.max_row_updates)
    print(f"corpus: {len(sents)} sentences, {raw} words; {cfg}")
    tags = pd_major_tags()
    print(f"cpu cores: {os.cpu_count()}; {load()}")

    t, cpu = time.perf_counter(), time.process_time()
    gm = Word2Vec(sents, sg=int(cfg.sg), vector_size=cfg.dim, window=cfg.window, negative=cfg.negative, hs=0,
                  sample=cfg.sample, min_count=cfg.min_count, epochs=epochs, alpha=cfg.lr, min_alpha=cfg.min_lr,
                  ns_exponent=cfg.ns_exponent, cbow_mean=1, workers=args.workers, seed=0)
    g_wall, g_cpu = time.perf_counter() - t, time.process_time() - cpu
    g_wps = raw * epochs / g_wall
    g_pos = pos_agreement(gm.wv.index_to_key, gm.wv.vectors, tags=tags)
    print(f"gensim: {g_wall:.1f} s wall, {g_cpu:.1f} s CPU, {g_wps:,.0f} words/s, vocab {len(gm.wv)}, {g_pos}; {load()}")

    t, cpu = time.perf_counter(), time.process_time()
    kv, summary = fit(sents, cfg, device="cpu", workers=args.workers, progress=False)
    c_wall, c_cpu = time.perf_counter() - t, time.process_time() - cpu
    c_wps = raw * epochs / c_wall
    c_pos = pos_agreement(kv.index_to_key, kv.vectors, tags=tags)
    print(f"ctxlib: {c_wall:.1f} s wall, {c_cpu:.1f} s CPU, {c_wps:,.0f} words/s, vocab {len(kv)}, {c_pos}, epoch loss {summary['epoch_loss']}; {load()}")
    for w in WORDS:
        if w in kv and w in gm.wv:
            print(f"  {w}: ctxlib {[x for x, _ in kv.most_similar(w, topn=5)]}  gensim {[x for x, _ in gm.wv.most_similar(w, topn=5)]}")
    print(json.dumps({"ctxlib_words_per_s": round(c_wps), "gensim_words_per_s": round(g_wps),
                      "speed_ratio": round(c_wps / g_wps, 3), "ctxlib_pos_agreement": c_pos["pos_agreement_at_10"],
                      "gensim_pos_agreement": g_pos["pos_agreement_at_10"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

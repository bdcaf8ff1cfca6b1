"""ctxlib's word2vec against gensim 4.4 on the same corpus with the same hyperparameters, in one run.

Corpus: the train split of both sources (People's Daily + reviews), `ctxlib.corpus.sentences("all", "train")`,
the same list of word lists for both. Hyperparameters (shared): sg, dim, window, negative, sample, min_count,
epochs, alpha/min_alpha = lr/min_lr, ns_exponent 0.75, cbow_mean=1, seed 0, and the same number of workers
(gensim's worker threads; ctxlib's Hogwild threads).

ctxlib variants (--variants): numba-table (the CPU kernel with gensim's sigmoid table: fit's default on CPU),
numba-exact (the kernel with the exact sigmoid), torch (the batched torch path forced on CPU, single-threaded
ops per worker).
The runs are interleaved: for each round and each worker count, gensim runs, then each ctxlib variant, so that
the load of a shared machine falls on all of them alike; each ratio is against the gensim run of the same round
and worker count. The kernel is compiled (or loaded from numba's disk cache) once before the timed runs; its
load time is printed.

Speed: words/s = raw corpus words x epochs / wall time of the whole call (vocabulary building included, for both).
The CPU seconds of each call (all threads) are printed too: on a shared machine they show the work done,
independent of how much of the CPU the other processes left.
Quality: POS agreement@10. Each People's Daily word's tag is its most frequent gold POS tag over all of PD.
For the 2,000 most frequent PD words that are in the model's vocabulary, take the 10 nearest neighbours by cosine
over the model's FULL vocabulary (the word itself excluded); the score is the share of neighbours whose tag equals
the word's own. Neighbours without a PD tag (e.g. review-only words) count as disagreeing.

    .venv/bin/python bench/word2vec_vs_gensim.py [--epochs 5] [--workers 1 2] [--variants numba-table numba-exact]
                                                 [--rounds 1] [--cbow] [--quick] [--roof]

The last output line is one JSON object: per worker count, the median words/s, speed ratio and POS agreement
of gensim and of each variant. The CPU is shared: the load average is printed around each run.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path
from statistics import median

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ctxlib import corpus  # noqa: E402
from ctxlib.models.word2vec import Word2VecConfig  # noqa: E402
from ctxlib.training import sgns_numba  # noqa: E402
from ctxlib.training.word2vec import PRESETS, fit, pd_major_tags, pos_agreement  # noqa: E402

WORDS = ("中国", "苹果", "发展", "酒店", "好")
VARIANTS = {"numba-table": ("numba", "table"), "numba-exact": ("numba", "exact"), "torch": ("torch", "exact")}


def load() -> str:
    return "load average %.2f %.2f %.2f" % os.getloadavg()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="every 5th sentence and 1 epoch (a smoke test, ~1 min)")
    ap.add_argument("--workers", type=int, nargs="+", default=[2], help="worker counts to compare (e.g. 1 2)")
    ap.add_argument("--variants", nargs="+", default=["numba-table"], choices=list(VARIANTS), help="ctxlib variants")
    ap.add_argument("--rounds", type=int, default=1, help="interleaved rounds (medians are reported)")
    ap.add_argument("--cbow", action="store_true", help="CBOW instead of skip-gram")
    ap.add_argument("--roof", action="store_true", help="also estimate the kernel's physical limit on this CPU")
    ap.add_argument(
        "--batch-size", type=int, default=None, help="torch path: windows per SGD step (default: the preset's)"
    )
    ap.add_argument(
        "--max-row-updates", type=int, default=None, help="torch path: per-row update cap (default: the preset's)"
    )
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    from gensim.models import Word2Vec

    sents = corpus.sentences("all", "train")
    epochs = args.epochs
    if args.quick:
        sents, epochs = sents[::5], 1
    raw = sum(len(s) for s in sents)
    base = Word2VecConfig(**PRESETS["default"].model)
    cfg = Word2VecConfig(
        sg=not args.cbow,
        dim=base.dim,
        window=base.window,
        negative=base.negative,
        sample=base.sample,
        min_count=base.min_count,
        epochs=epochs,
        lr=base.lr,
        min_lr=base.min_lr,
        seed=0,
        max_vocab=0,
        batch_size=args.batch_size or base.batch_size,
        max_row_updates=base.max_row_updates if args.max_row_updates is None else args.max_row_updates,
    )
    print(f"corpus: {len(sents)} sentences, {raw} words; {cfg}")
    tags = pd_major_tags()
    print(f"cpu cores: {os.cpu_count()}; {load()}")
    load_start = os.getloadavg()[0]
    if any(VARIANTS[v][0] == "numba" for v in args.variants):
        t, cpu = time.perf_counter(), time.process_time()
        sgns_numba.warm_up()  # compiles, or loads numba's cached machine code
        print(
            f"numba kernel ready in {time.perf_counter() - t:.2f} s wall, {time.process_time() - cpu:.2f} s CPU "
            f"(compile on a cold cache, else a load from {sgns_numba.__name__}'s numba cache)"
        )

    warm = Word2VecConfig(**{**cfg.__dict__, "epochs": 1, "min_count": 1})
    for v in args.variants:  # first-call costs (imports, the kernel's load) stay out of the timed runs
        fit(sents[:200], warm, device="cpu", progress=False, backend=VARIANTS[v][0], sigmoid=VARIANTS[v][1])

    roof = kernel_roof(cfg) if args.roof else None

    runs: dict[tuple[int, str], list[dict]] = {}
    gm = kv = None
    for r in range(args.rounds):
        for w in args.workers:
            t, cpu = time.perf_counter(), time.process_time()
            gm = Word2Vec(
                sents,
                sg=int(cfg.sg),
                vector_size=cfg.dim,
                window=cfg.window,
                negative=cfg.negative,
                hs=0,
                sample=cfg.sample,
                min_count=cfg.min_count,
                epochs=epochs,
                alpha=cfg.lr,
                min_alpha=cfg.min_lr,
                ns_exponent=cfg.ns_exponent,
                cbow_mean=1,
                workers=w,
                seed=0,
            )
            g_wall, g_cpu = time.perf_counter() - t, time.process_time() - cpu
            g = {
                "words_per_s": raw * epochs / g_wall,
                "words_per_cpu_s": raw * epochs / g_cpu,
                **pos_agreement(gm.wv.index_to_key, gm.wv.vectors, tags=tags),
            }
            runs.setdefault((w, "gensim"), []).append(g)
            print(
                f"round {r + 1}, {w} worker(s): gensim: {g_wall:.1f} s wall, {g_cpu:.1f} s CPU, {g['words_per_s']:,.0f} "
                f"words/s, vocab {len(gm.wv)}, POS {g['pos_agreement_at_10']}; {load()}",
                flush=True,
            )
            for v in args.variants:
                backend, sigmoid = VARIANTS[v]
                t, cpu = time.perf_counter(), time.process_time()
                kv, summary = fit(sents, cfg, device="cpu", workers=w, progress=False, backend=backend, sigmoid=sigmoid)
                c_wall, c_cpu = time.perf_counter() - t, time.process_time() - cpu
                c = {
                    "words_per_s": raw * epochs / c_wall,
                    "words_per_cpu_s": raw * epochs / c_cpu,
                    **pos_agreement(kv.index_to_key, kv.vectors, tags=tags),
                    "pairs_per_s": summary["pairs_seen"] / summary["wall_s"],
                    "train_wall_s": summary["wall_s"],
                    "pairs_per_cpu_s": summary["pairs_seen"] / max(summary["cpu_s"], 1e-9),
                    "pairs_per_word": summary["pairs_seen"] / (raw * epochs),
                }
                c["ratio"] = c["words_per_s"] / g["words_per_s"]
                c["cpu_ratio"] = c["words_per_cpu_s"] / g["words_per_cpu_s"]
                runs.setdefault((w, v), []).append(c)
                print(
                    f"round {r + 1}, {w} worker(s): ctxlib {v}: {c_wall:.1f} s wall ({summary['wall_s']} s training), "
                    f"{c_cpu:.1f} s CPU, {c['words_per_s']:,.0f} words/s = {c['ratio']:.2f}x gensim (per CPU second "
                    f"{c['cpu_ratio']:.2f}x), "
                    f"{summary['pairs_seen'] / raw / epochs:.2f} pairs per raw word, {c['pairs_per_s']:,.0f} pairs/s "
                    f"in training, vocab {len(kv)}, POS {c['pos_agreement_at_10']}, epoch loss {summary['epoch_loss']}; "
                    f"{load()}",
                    flush=True,
                )
    if kv is not None and gm is not None:
        for word in WORDS:
            if word in kv and word in gm.wv:
                print(
                    f"  {word}: ctxlib {[x for x, _ in kv.most_similar(word, topn=5)]}  "
                    f"gensim {[x for x, _ in gm.wv.most_similar(word, topn=5)]}"
                )
    out = {
        "sg": cfg.sg,
        "load_start": load_start,
        "epochs": epochs,
        "rounds": args.rounds,
        "cpu_cores": os.cpu_count(),
        "load_end": os.getloadavg()[0],
    }
    for w in args.workers:
        row = {
            "gensim_words_per_s": round(median(x["words_per_s"] for x in runs[(w, "gensim")])),
            "gensim_pos_agreement": median(x["pos_agreement_at_10"] for x in runs[(w, "gensim")]),
        }
        for v in args.variants:
            xs = runs[(w, v)]
            row[f"{v}_words_per_s"] = round(median(x["words_per_s"] for x in xs))
            row[f"{v}_speed_ratio"] = round(median(x["ratio"] for x in xs), 3)
            row[f"{v}_cpu_speed_ratio"] = round(median(x["cpu_ratio"] for x in xs), 3)
            row[f"{v}_pos_agreement"] = median(x["pos_agreement_at_10"] for x in xs)
            row[f"{v}_train_pairs_per_s"] = round(median(x["pairs_per_s"] for x in xs))
            row[f"{v}_train_pairs_per_cpu_s"] = round(median(x["pairs_per_cpu_s"] for x in xs))
        out[f"workers_{w}"] = row
    kernel_runs = [runs[(args.workers[0], v)] for v in args.variants if VARIANTS[v][0] == "numba"]
    if roof is not None and kernel_runs:
        xs = kernel_runs[0]
        ppw = median(x["pairs_per_word"] for x in xs)
        out["roof"] = {
            **{k: round(v) for k, v in roof.items()},
            "pairs_per_raw_word": round(ppw, 3),
            "l1_words_per_s_per_core": round(roof["l1_pairs_per_s"] / ppw),
            "kernel_train_pairs_per_cpu_s": round(median(x["pairs_per_cpu_s"] for x in xs)),
        }
    print(json.dumps(out))
    return 0


def kernel_roof(cfg: Word2VecConfig) -> dict:
    """The kernel's physical limit on this CPU, two ways (pairs = (context, center) updates, each with its negatives).

    1. L1 ports: per pair the kernel loads ((K+1) x 5 + 2) rows of D floats (per target: the dot product reads
       2 rows; the update reads the output row, the error row and the input row and writes 2; per pair: the input
       row and the error row once more) and stores ((K+1) x 2 + 2) rows (the error row is zeroed, the input row
       written). With 32-byte AVX2 accesses, two loads and one store per cycle (Zen 3; Haswell and later alike),
       that is max(loads / 2, stores) cycles per pair at the clock in /proc/cpuinfo: an upper bound when every
       row is in L1 and nothing else (the sigmoid, the random numbers, latencies) costs a cycle.
    2. DRAM: if every row of a pair came from memory and went back ((K+2) rows read and written), a pair moves
       2 (K+2) D 4 bytes; a single-thread copy of 256 MB measures the bandwidth.
    Also measured: the kernel itself on a 64-word vocabulary (all rows in L1/L2: no cache misses), per CPU second
    of its thread (thread_time, so other processes on a loaded machine do not count)."""
    import numpy as np

    from ctxlib.training.word2vec_sgd import negative_table

    D, K = cfg.dim, cfg.negative
    mhz = 0.0
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("cpu MHz"):
                mhz = float(line.split(":")[1])
                break
    loads, stores = ((K + 1) * 5 + 2) * D / 8, ((K + 1) * 2 + 2) * D / 8
    l1_pairs = mhz * 1e6 / max(loads / 2, stores) if mhz else float("nan")
    a, b = np.ones(2**26, np.float32), np.zeros(2**26, np.float32)
    best = 0.0
    for _ in range(5):
        c0 = time.thread_time()
        np.copyto(b, a)
        best = max(best, 2 * a.nbytes / max(time.thread_time() - c0, 1e-9))
    dram_pairs = best / (2 * (K + 2) * D * 4)
    rng = np.random.default_rng(0)
    V, n = 64, 200_000
    ids = rng.integers(0, V, n).astype(np.int64)
    sid = (np.arange(n) // 20).astype(np.int64)
    w_in, w_out = ((rng.random((V, D)) - 0.5) / D).astype(np.float32), np.zeros((V, D), np.float32)
    hot = 0.0
    for _ in range(3):
        wk = sgns_numba.Worker(D, K, 1)
        c0 = time.thread_time()
        _, _, pairs = wk.run(w_in, w_out, ids, sid, 0, n, cfg, negative_table(np.ones(V)), 0.01)
        hot = max(hot, pairs / max(time.thread_time() - c0, 1e-9))
    print(
        f"roof: L1 load ports {l1_pairs:,.0f} pairs/s ({loads:.0f} 32-byte loads and {stores:.0f} stores per pair, "
        f"{mhz:.0f} MHz); "
        f"DRAM {dram_pairs:,.0f} pairs/s (copy {best / 1e9:.1f} GB/s, {2 * (K + 2) * D * 4} bytes per pair); "
        f"kernel on L1/L2-resident rows {hot:,.0f} pairs per CPU second",
        flush=True,
    )
    return {
        "l1_pairs_per_s": l1_pairs,
        "dram_pairs_per_s": dram_pairs,
        "hot_kernel_pairs_per_cpu_s": hot,
        "copy_bytes_per_s": best,
    }


if __name__ == "__main__":
    sys.exit(main())

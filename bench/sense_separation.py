"""Sense separation per layer: leave-one-out nearest-centroid accuracy (ctxlib.analysis.layer_sense_accuracy).

  python bench/sense_separation.py elmo [--pd-cap 300]

1. The app's labelled example sets (ctxlib.examples.EXAMPLE_SETS; a fallback 苹果 / 活动 set if absent),
   for the trained model and for an untrained model of the same architecture (random weights, same seed):
   how much of the separation comes from context mixing alone, and how much training adds.
2. Noun vs verb for the tokens of 活动 and 发展 in held-out (test split) People's Daily text, gold tags
   n / v / vn (vn counts as noun), per layer, with the majority rate (what word2vec gets: one vector per word).
   活动 is almost always vn in PD (1 verb token in the test split), so a second figure uses all of PD,
   balanced: every verb token and as many noun tokens (the LM saw 80% of this text, never its tags).
The last line printed is one JSON object with everything.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

import ctxlib  # noqa: E402
from ctxlib import corpus  # noqa: E402
from ctxlib.analysis import layer_sense_accuracy  # noqa: E402
from ctxlib.evaluation.tasks import encode_words  # noqa: E402

FALLBACK = {
    "苹果": {
        "word": "苹果",
        "sentences": [
            (s, "水果")
            for s in [
                "苹果真好吃，又甜又脆。",
                "妈妈买了一斤苹果。",
                "这个苹果有点酸。",
                "树上结满了红红的苹果。",
                "他每天吃一个苹果。",
                "苹果削皮以后切成小块。",
                "秋天是苹果成熟的季节。",
                "苹果汁很有营养。",
            ]
        ]
        + [
            (s, "品牌")
            for s in [
                "苹果发布了新款手机。",
                "我的苹果电脑坏了。",
                "苹果公司的股价上涨了。",
                "他买了一台苹果笔记本。",
                "苹果的操作系统很流畅。",
                "这款苹果手机价格太贵。",
                "苹果今年推出了新的平板。",
                "苹果商店里人很多。",
            ]
        ],
    },
    "活动": {
        "word": "活动",
        "sentences": [
            (s, "名词")
            for s in [
                "学校举办了一次植树活动。",
                "这次活动非常成功。",
                "我们参加了社区的志愿活动。",
                "活动的时间定在周六。",
                "公司组织了团建活动。",
                "这项活动吸引了很多人。",
            ]
        ]
        + [
            (s, "动词")
            for s in [
                "饭后出去活动一下身体。",
                "他在院子里活动筋骨。",
                "老人每天早上都要活动活动。",
                "坐久了要起来活动。",
                "运动员在赛前活动手腕。",
                "病人可以下床活动了。",
            ]
        ],
    },
}


def example_sets():
    try:
        from ctxlib.examples import EXAMPLE_SETS

        return EXAMPLE_SETS, "ctxlib.examples"
    except ImportError:
        return FALLBACK, "fallback"


def sets_accuracy(enc, sets) -> dict:
    out = {}
    for name, s in sets.items():
        texts = [t for t, _ in s["sentences"]]
        labels = [lab for _, lab in s["sentences"]]
        vecs = enc.word_vectors(texts, s["word"])
        out[name] = [round(a, 3) for a in layer_sense_accuracy(vecs, labels)]
    return out


def pd_noun_verb(
    enc, words=("活动", "发展"), cap: int = 300, seed: int = 0, split: str | None = "test", balanced: bool = False
) -> dict:
    """Per word: noun-vs-verb nearest-centroid accuracy per layer over gold-tagged tokens (vn counts as noun).

    balanced: keep every token of the rarer role and as many of the other (majority rate 0.5)."""
    sents = [(p.words[a:b], p.tags[a:b]) for p in corpus.load("pd", split) for a, b in p.sentences()]
    out = {}
    for w in words:
        occ = [
            (ws, i, "noun" if ts[i] in ("n", "vn") else "verb")
            for ws, ts in sents
            for i, x in enumerate(ws)
            if x == w and ts[i] in ("n", "v", "vn")
        ]
        rng = random.Random(seed)
        if balanced:
            by = {lab: [o for o in occ if o[2] == lab] for lab in ("noun", "verb")}
            k = min(len(v) for v in by.values())
            occ = rng.sample(by["noun"], k) + rng.sample(by["verb"], k)
        occ = rng.sample(occ, min(cap, len(occ)))
        labels = [lab for _, _, lab in occ]
        counts = {lab: labels.count(lab) for lab in sorted(set(labels))}
        r = {"n": len(occ), "counts": counts, "majority": round(max(counts.values()) / max(1, len(labels)), 3)}
        if len(counts) >= 2 and min(counts.values()) >= 2:
            feats = encode_words(enc, [ws for ws, _, _ in occ])
            vecs = np.stack([f[i].astype(np.float32) for f, (_, i, _) in zip(feats, occ)])  # (n, L, D)
            r["per_layer"] = [round(a, 3) for a in layer_sense_accuracy(vecs, labels)]
        else:
            r["per_layer"] = None  # too few tokens of one role
        out[w] = r
    return out


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("model", nargs="?", default="elmo")
    ap.add_argument("--pd-cap", type=int, default=300, help="at most this many tokens of each word")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    t0 = time.time()
    enc = ctxlib.load(a.model)
    sets, src = example_sets()
    res = {"model": a.model, "layer_names": enc.layer_names, "example_sets_from": src}
    res["trained"] = sets_accuracy(enc, sets)
    base = enc.untrained(seed=a.seed) if hasattr(enc, "untrained") else None
    if base is not None:
        res["untrained"] = sets_accuracy(base, sets)
    for name in sets:
        tr, un = res["trained"][name], res.get("untrained", {}).get(name)
        print(f"{name:6s} trained {tr}  untrained {un}")
    best = {k: max(v) for k, v in res["trained"].items()}
    res["best_layer_mean"] = round(float(np.mean(list(best.values()))), 3)
    res["per_layer_mean"] = {"trained": [round(float(x), 3) for x in np.mean(list(res["trained"].values()), 0)]}
    if base is not None:
        res["per_layer_mean"]["untrained"] = [round(float(x), 3) for x in np.mean(list(res["untrained"].values()), 0)]
    print("mean per layer", res["per_layer_mean"], "mean of best layer", res["best_layer_mean"])
    # held-out text (test split, natural proportions), then all of PD balanced (活动 has 1 verb token in test)
    models = [("trained", enc)] + ([("untrained", base)] if base is not None else [])
    res["pd_noun_verb_test"] = {k: pd_noun_verb(m, cap=a.pd_cap, seed=a.seed) for k, m in models}
    res["pd_noun_verb_all_balanced"] = {
        k: pd_noun_verb(m, cap=a.pd_cap, seed=a.seed, split=None, balanced=True) for k, m in models
    }
    for key in ("pd_noun_verb_test", "pd_noun_verb_all_balanced"):
        for kind, d in res[key].items():
            for w, r in d.items():
                print(
                    f"{key} {w} ({kind}): n={r['n']} {r['counts']} majority {r['majority']} per layer {r['per_layer']}"
                )
    res["seconds"] = round(time.time() - t0, 1)
    print(json.dumps(res, ensure_ascii=False))


if __name__ == "__main__":
    main()

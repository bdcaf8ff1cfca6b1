"""Sense separation per layer: leave-one-out nearest-centroid accuracy of a word's token vectors.

For each labelled example set (ctxlib.examples.EXAMPLE_SETS, or a built-in fallback of
苹果 fruit/brand and 活动 noun/verb), the word's vectors in every sentence are pooled
over its tokens and scored per layer with ctxlib.analysis.layer_sense_accuracy. For a
BERT checkpoint the same architecture with random weights (same seed) is scored too:
context mixing alone separates some senses; training must add to it.

    python bench/bert_sense_separation.py --model bert
Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import ctxlib  # noqa: E402
from ctxlib.analysis import layer_sense_accuracy  # noqa: E402

FALLBACK = {
    "苹果": {
        "word": "苹果",
        "sentences": [
            ("苹果真好吃，又甜又脆。", "fruit"),
            ("妈妈买了一袋苹果。", "fruit"),
            ("果园里的苹果熟了。", "fruit"),
            ("每天吃一个苹果。", "fruit"),
            ("他把苹果削了皮。", "fruit"),
            ("这批苹果个头大，水分足。", "fruit"),
            ("苹果手机很好用。", "brand"),
            ("苹果公司发布了新电脑。", "brand"),
            ("我的苹果电脑要更新系统了。", "brand"),
            ("苹果的股价上涨了。", "brand"),
            ("他用苹果手表记录跑步。", "brand"),
            ("开发者为苹果的应用商店写软件。", "brand"),
        ],
    },
    "活动": {
        "word": "活动",
        "sentences": [
            ("学校举办了很多活动。", "n"),
            ("这次活动很成功。", "n"),
            ("他参加了社区的志愿活动。", "n"),
            ("活动结束后大家合影。", "n"),
            ("公司组织了一次团建活动。", "n"),
            ("这项活动吸引了许多市民。", "n"),
            ("老人每天早上出去活动活动。", "v"),
            ("你该起来活动一下身体。", "v"),
            ("他们在山区活动了三年。", "v"),
            ("坐久了要站起来活动。", "v"),
            ("游击队在这一带活动。", "v"),
            ("饭后散步活动筋骨。", "v"),
        ],
    },
}


def example_sets() -> dict:
    try:
        from ctxlib.examples import EXAMPLE_SETS

        return EXAMPLE_SETS
    except ImportError:
        return FALLBACK


def scores(enc, sets: dict) -> dict:
    out = {}
    for name, s in sets.items():
        texts = [t for t, _ in s["sentences"]]
        labels = [lab for _, lab in s["sentences"]]
        vecs = enc.word_vectors(texts, s["word"])  # (n, n_layers, dim)
        out[name] = [round(a, 4) for a in layer_sense_accuracy(vecs, labels)]
    return out


def summarise(per_set: dict) -> dict:
    m = np.array(list(per_set.values()))  # (sets, layers)
    mean = m.mean(0)
    return {
        "mean_per_layer": [round(float(x), 4) for x in mean],
        "best_layer": int(mean.argmax()),
        "best_layer_mean": round(float(mean.max()), 4),
        "apple_best": round(float(max(per_set.get("苹果", [float("nan")]))), 4) if "苹果" in per_set else None,
    }


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="bert")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    sets = example_sets()
    enc = ctxlib.load(args.model)
    trained = scores(enc, sets)
    result = {
        "model": args.model,
        "layer_names": enc.layer_names,
        "sets": list(sets),
        "trained": summarise(trained),
        "trained_per_set": trained,
    }
    if enc.kind == "bert":
        from ctxlib.models.bert import BertModel
        from ctxlib.models.bert_encoder import BertEncoder

        torch.manual_seed(args.seed)
        rand = BertEncoder("untrained", enc.config, {}, None, BertModel(enc.model.cfg), enc.tokenizer)
        untrained = scores(rand, sets)
        result["untrained"] = summarise(untrained)
        result["untrained_per_set"] = untrained
    for k in ("trained", "untrained"):
        if k in result:
            print(
                f"{k:>10}: "
                + "  ".join(f"{n}={a:.3f}" for n, a in zip(result["layer_names"], result[k]["mean_per_layer"]))
            )
    for name in sets:
        row = "  ".join(f"{a:.2f}" for a in trained[name])
        extra = (
            ("   untrained " + "  ".join(f"{a:.2f}" for a in result["untrained_per_set"][name]))
            if "untrained" in result
            else ""
        )
        print(f"  {name:<6} {row}{extra}")
    print(json.dumps(result, ensure_ascii=False))


if __name__ == "__main__":
    main()

"""The GPT issue's figures, on the shipped checkpoints (or others named with --gpt/--bert/--elmo):

1. GPT's held-out bits per character on the corpus valid split, with its next-character top-1/top-5 there,
   beside BERT's MLM top-1/top-5 on the same split (2,000 fixed examples, as its training summary).
2. Self-similarity and anisotropy per layer for ELMo, BERT and GPT (Ethayarajh 2019): for each of WORDS, up to
   --cap corpus occurrences (ctxlib.explore_atlas.atlas_sample, the atlas's own sample); self-similarity is the mean
   pairwise cosine of the word's token vectors, the anisotropy baseline the mean cosine between random other
   tokens of the same sentences; "adjusted" is their difference.
3. Five fixed prompts written at temperature 0.8, top-k 20, seed 0.

    python bench/gpt_figures.py                    # about 5-10 minutes on one CPU thread
    python bench/gpt_figures.py --skip-lm --cap 50 # the contextuality table and samples only
Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import ctxlib  # noqa: E402
from ctxlib import corpus  # noqa: E402
from ctxlib.analysis import anisotropy, self_similarity  # noqa: E402
from ctxlib.explore_atlas import atlas_sample  # noqa: E402

# chosen before looking at any result: frequent PD/review words of several kinds (nouns, verbs, function words,
# words of the sense sets)
WORDS = [
    "发展",
    "问题",
    "工作",
    "经济",
    "我们",
    "东西",
    "意思",
    "运动",
    "活动",
    "地",
    "还",
    "打",
    "花",
    "开",
    "看",
    "会",
    "长",
    "头",
    "光",
    "手机",
]
PROMPTS = ["今天天气", "这家酒店", "我买了一台苹果", "中国经济", "他打开了"]


@torch.no_grad()
def gpt_top(enc, paragraphs, max_chars: int | None) -> dict:
    """Next-character top-1/top-5 of GPT on the same windows as training.gpt.evaluate_lm."""
    from ctxlib.training.gpt import _valid_batches

    model, tok = enc.model, enc.tokenizer
    model.eval()
    hit1 = hit5 = n = 0
    for b in _valid_batches(model, tok, paragraphs, max_chars)[0]:
        ids, labels = b["ids"], b["labels"]
        (h,), _ = model(ids)
        keep = labels >= 0
        logits = model.mlm_logits(h[keep]).float()  # the tied output layer, as in training and generate()
        top5 = logits.topk(5, -1).indices
        y = labels[keep]
        hit1 += int((top5[:, 0] == y).sum())
        hit5 += int((top5 == y[:, None]).any(-1).sum())
        n += int(keep.sum())
    return {"next_char_top1": round(hit1 / max(n, 1), 4), "next_char_top5": round(hit5 / max(n, 1), 4), "n_chars": n}


def contextuality(enc, cap: int) -> dict:
    rows = {}
    for w in WORDS:
        s = atlas_sample(enc, w, cap=cap)
        if len(s.vecs) < 5:
            continue
        L = s.vecs.shape[1]
        rows[w] = {
            "n": len(s.vecs),
            "self_sim": [self_similarity(s.vecs[:, j]) for j in range(L)],
            "aniso": [anisotropy(s.base[:, j]) for j in range(L)],
        }
    names = list(enc.layer_names)
    ss = np.mean([r["self_sim"] for r in rows.values()], 0)
    an = np.mean([r["aniso"] for r in rows.values()], 0)
    return {
        "layers": names,
        "words": len(rows),
        "self_similarity": [round(float(x), 3) for x in ss],
        "anisotropy": [round(float(x), 3) for x in an],
        "adjusted": [round(float(x), 3) for x in ss - an],
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpt", default="gpt")
    ap.add_argument("--bert", default="bert")
    ap.add_argument("--elmo", default="elmo")
    ap.add_argument("--cap", type=int, default=100, help="corpus occurrences per word")
    ap.add_argument("--max-chars", type=int, default=None, help="valid characters for GPT (None = the whole split)")
    ap.add_argument("--skip-lm", action="store_true")
    a = ap.parse_args(argv)
    torch.manual_seed(0)
    out: dict = {}
    t0 = time.time()
    gpt = ctxlib.load(a.gpt)
    bert = ctxlib.load(a.bert)
    if not a.skip_lm:
        from ctxlib.training.bert import evaluate_pretraining
        from ctxlib.training.gpt import evaluate_lm

        valid = corpus.load("corpora", "valid")
        lm = evaluate_lm(gpt.model, gpt.tokenizer, valid, max_chars=a.max_chars)
        lm.update(gpt_top(gpt, valid, a.max_chars))
        out["gpt_valid"] = lm
        out["bert_valid"] = evaluate_pretraining(bert.model, bert.tokenizer, valid, n=2000)
        print("GPT held-out:", out["gpt_valid"])
        print("BERT held-out (same split):", out["bert_valid"])
    out["contextuality"] = {}
    for name, enc in (("elmo", ctxlib.load(a.elmo)), ("bert", bert), ("gpt", gpt)):
        c = contextuality(enc, a.cap)
        out["contextuality"][name] = c
        print(f"\n{name} ({c['words']} words, up to {a.cap} occurrences each)")
        print(f"  {'layer':<12}{'self-sim':>10}{'aniso':>10}{'adjusted':>10}")
        for n_, s_, an_, ad_ in zip(c["layers"], c["self_similarity"], c["anisotropy"], c["adjusted"]):
            print(f"  {n_:<12}{s_:>10.3f}{an_:>10.3f}{ad_:>10.3f}")
    out["samples"] = {}
    print()
    for p in PROMPTS:
        g = gpt.generate(p, max_new=50, temperature=0.8, top_k=20, seed=0)
        out["samples"][p] = g["text"]
        print(f"{p} -> {g['text']}")
    out["seconds"] = round(time.time() - t0, 1)
    print(json.dumps(out, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Training speed: ctxlib's BERT against transformers' BertForMaskedLM, same config, same batches.

Both models get the same vocabulary size, width, depth, heads, FFN width and max_len,
the same batches (real pre-training examples from the corpus, padded to the same
length), the same thread count and precision, and the same AdamW step. They run
alternately (ctxlib, HF, ctxlib, HF, ...) in one process so load from other jobs
hits both alike. Attention: both use PyTorch's fused scaled_dot_product_attention
(HF's default attn_implementation="sdpa"; ctxlib's training path), with dropout 0
in both so neither pays for dropout masks the other skips.

What differs is the design: ctxlib's loss scores only the ~15% masked positions
(the MLM head's vocabulary projection is the largest single matmul) and adds the
NSP head; HF's BertForMaskedLM projects every position and masks the loss with -100.
tokens = non-pad input tokens.

    pip install transformers==5.23.0   # bench-only
    OMP_NUM_THREADS=1 python bench/bert_vs_hf.py --threads 1 [--precision fp32|bf16|both]
Last line: {"ctxlib_tokens_per_s":..,"hf_tokens_per_s":..,"speed_ratio":..}
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

from ctxlib import corpus  # noqa: E402
from ctxlib.models.bert import BertConfig, BertModel, CharTokenizer  # noqa: E402
from ctxlib.training.bert_data import Documents, collate, make_example  # noqa: E402


def hf_model(cfg: BertConfig):
    from transformers import BertConfig as HFConfig
    from transformers import BertForMaskedLM

    hc = HFConfig(
        vocab_size=cfg.vocab_size,
        hidden_size=cfg.hidden,
        num_hidden_layers=cfg.layers,
        num_attention_heads=cfg.heads,
        intermediate_size=cfg.ffn,
        max_position_embeddings=cfg.max_len,
        type_vocab_size=cfg.type_vocab,
        hidden_dropout_prob=cfg.dropout,
        attention_probs_dropout_prob=cfg.attn_dropout,
        pad_token_id=0,
    )
    return BertForMaskedLM._from_config(hc, attn_implementation="sdpa")


def hf_batch(b: dict) -> dict:
    ids = b["ids"]
    labels = torch.full_like(ids, -100).view(-1)
    labels[b["mlm_pos"]] = b["mlm_labels"]
    return {
        "input_ids": ids,
        "token_type_ids": b["segment_ids"],
        "attention_mask": (ids != 0).long(),
        "labels": labels.view_as(ids),
    }


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seq", type=int, default=128, help="max_len of both models")
    ap.add_argument("--rounds", type=int, default=6, help="alternating rounds")
    ap.add_argument("--steps", type=int, default=3, help="timed steps per model per round")
    ap.add_argument(
        "--precision",
        default="fp32",
        choices=["fp32", "bf16", "both"],
        help="fp32 both, bf16 autocast both, or all four alternating (the JSON's main figures are fp32)",
    )
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--ffn", type=int, default=1024)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    pars = corpus.load("all", "train")
    tok = CharTokenizer.build(pars, min_count=2)
    docs = Documents(pars, tok)
    rng = np.random.default_rng(0)
    cfg = BertConfig(
        vocab_size=len(tok),
        hidden=args.hidden,
        layers=args.layers,
        heads=args.heads,
        ffn=args.ffn,
        max_len=args.seq,
        dropout=0.0,
        attn_dropout=0.0,
    )
    n_batches = 8
    batches = [
        collate([make_example(rng, tok, docs, max_len=args.seq) for _ in range(args.batch)]) for _ in range(n_batches)
    ]
    ours, theirs = BertModel(cfg).train(), hf_model(cfg).train()
    n_ours = sum(p.numel() for p in ours.parameters())
    n_hf = sum(p.numel() for p in theirs.parameters())
    opts = {"ctxlib": torch.optim.AdamW(ours.parameters(), 1e-4), "hf": torch.optim.AdamW(theirs.parameters(), 1e-4)}

    def step(name, b, bf16):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            if name == "ctxlib":
                loss, _ = ours.loss(b)
            else:
                loss = theirs(**hf_batch(b)).loss
        opts[name].zero_grad(set_to_none=True)
        loss.backward()
        opts[name].step()
        return int((b["ids"] != 0).sum())

    precs = {"fp32": [False], "bf16": [True], "both": [False, True]}[args.precision]
    runs = [(n, p) for p in precs for n in ("ctxlib", "hf")]
    for name, p in runs:  # warm-up, untimed
        step(name, batches[0], p)
    times = {r: 0.0 for r in runs}
    toks = {r: 0 for r in runs}
    k = 0
    for r in range(args.rounds):
        for run in runs if r % 2 == 0 else runs[::-1]:
            for s_ in range(args.steps):
                b = batches[(k + s_) % n_batches]
                t = time.perf_counter()
                toks[run] += step(run[0], b, run[1])
                times[run] += time.perf_counter() - t
        k += args.steps
    rate = {f"{n}_{'bf16' if p else 'fp32'}": toks[(n, p)] / times[(n, p)] for n, p in runs}
    import transformers

    print(
        f"config {cfg}\nparams ctxlib {n_ours:,} (incl. NSP head), hf {n_hf:,}; batch {args.batch}, "
        f"mean non-pad tokens/batch {np.mean([int((b['ids'] != 0).sum()) for b in batches]):.0f}, "
        f"threads {args.threads}, transformers {transformers.__version__}"
    )
    for key, v in rate.items():
        print(f"{key:>12}: {v:8.0f} tok/s")
    main_p = "fp32" if "ctxlib_fp32" in rate else "bf16"
    res = {
        "ctxlib_tokens_per_s": round(rate[f"ctxlib_{main_p}"], 1),
        "hf_tokens_per_s": round(rate[f"hf_{main_p}"], 1),
        "speed_ratio": round(rate[f"ctxlib_{main_p}"] / rate[f"hf_{main_p}"], 3),
        "precision": main_p,
        "threads": args.threads,
        "batch": args.batch,
        "seq": args.seq,
    }
    if args.precision == "both":
        res.update(
            {
                "ctxlib_bf16_tokens_per_s": round(rate["ctxlib_bf16"], 1),
                "hf_bf16_tokens_per_s": round(rate["hf_bf16"], 1),
                "speed_ratio_bf16": round(rate["ctxlib_bf16"] / rate["hf_bf16"], 3),
                "ctxlib_bf16_over_fp32": round(rate["ctxlib_bf16"] / rate["ctxlib_fp32"], 3),
            }
        )
    print(json.dumps(res))


if __name__ == "__main__":
    main()

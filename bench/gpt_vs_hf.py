"""Training speed: ctxlib's GPT against transformers' GPT2LMHeadModel, same config, same batches.

Both models get the same vocabulary size, width, depth, heads, FFN width and context length, the
same batches (real next-character windows from the corpus, ctxlib.training.gpt's batching), the same
thread count and precision, and the same AdamW step. They run alternately (ctxlib, HF, ctxlib, HF, ...)
in one process so load from other jobs hits both alike. Both use PyTorch's fused
scaled_dot_product_attention (HF's attn_implementation="sdpa"; ctxlib's training path) with dropout 0.

What differs is the design: ctxlib packs the real tokens of a batch (LayerNorms, QKV, MLP and the LM
head never touch [PAD]); GPT2LMHeadModel computes every position and masks the loss with -100.
ctxlib's LM head is BERT's MLM transform (dense + GELU + LayerNorm) before the tied projection, which
costs it one extra D x D matmul per token. tokens = non-pad input tokens.

    pip install -r bench/requirements.txt   # transformers, bench-only
    OMP_NUM_THREADS=1 python bench/gpt_vs_hf.py --threads 1 [--precision fp32|bf16|both]
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
from ctxlib.training.gpt import GptBatches, encode_documents  # noqa: E402


def hf_model(cfg: BertConfig):
    from transformers import GPT2Config, GPT2LMHeadModel

    hc = GPT2Config(vocab_size=cfg.vocab_size, n_embd=cfg.hidden, n_layer=cfg.layers, n_head=cfg.heads,
                    n_inner=cfg.ffn, n_positions=cfg.max_len, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                    activation_function="gelu", pad_token_id=0)
    return GPT2LMHeadModel._from_config(hc, attn_implementation="sdpa")


def hf_batch(b: dict) -> dict:
    # GPT2LMHeadModel shifts labels itself (logits[:, :-1] vs labels[:, 1:]); ctxlib's labels are already the
    # next character at each position, so HF gets them shifted right by one to score the same targets.
    ids, labels = b["ids"], b["labels"]
    shifted = torch.cat([torch.full_like(labels[:, :1], -100), labels[:, :-1]], 1)
    return {"input_ids": ids, "attention_mask": (ids != 0).long(), "labels": shifted}


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seq", type=int, default=128, help="context length of both models")
    ap.add_argument("--rounds", type=int, default=6, help="alternating rounds")
    ap.add_argument("--steps", type=int, default=3, help="timed steps per model per round")
    ap.add_argument("--precision", default="fp32", choices=["fp32", "bf16", "both"])
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--ffn", type=int, default=1024)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    pars = corpus.load("all", "train")
    tok = CharTokenizer.build(pars, min_count=2)
    docs = encode_documents(pars, tok)
    cfg = BertConfig(vocab_size=len(tok), hidden=args.hidden, layers=args.layers, heads=args.heads, ffn=args.ffn,
                     max_len=args.seq, dropout=0.0, attn_dropout=0.0, causal=True)
    n_batches = 8
    it = iter(GptBatches(docs, tok.cls_id, args.batch, args.seq, seed=0))
    batches = [next(it) for _ in range(n_batches)]
    ours, theirs = BertModel(cfg).train(), hf_model(cfg).train()
    n_ours = sum(p.numel() for p in ours.parameters())
    n_hf = sum(p.numel() for p in theirs.parameters())
    opts = {"ctxlib": torch.optim.AdamW(ours.parameters(), 1e-4), "hf": torch.optim.AdamW(theirs.parameters(), 1e-4)}

    def step(name, b, bf16):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = ours.loss(b)[0] if name == "ctxlib" else theirs(**hf_batch(b)).loss
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
        for run in (runs if r % 2 == 0 else runs[::-1]):
            for s_ in range(args.steps):
                b = batches[(k + s_) % n_batches]
                t = time.perf_counter()
                toks[run] += step(run[0], b, run[1])
                times[run] += time.perf_counter() - t
        k += args.steps
    rate = {f"{n}_{'bf16' if p else 'fp32'}": toks[(n, p)] / times[(n, p)] for n, p in runs}
    import transformers

    print(f"config {cfg}\nparams ctxlib {n_ours:,}, hf {n_hf:,}; batch {args.batch}, mean non-pad tokens/batch "
          f"{np.mean([int((b['ids'] != 0).sum()) for b in batches]):.0f}, threads {args.threads}, "
          f"transformers {transformers.__version__}")
    for key, v in rate.items():
        print(f"{key:>12}: {v:8.0f} tok/s")
    main_p = "fp32" if "ctxlib_fp32" in rate else "bf16"
    res = {"ctxlib_tokens_per_s": round(rate[f"ctxlib_{main_p}"], 1), "hf_tokens_per_s": round(rate[f"hf_{main_p}"], 1),
           "speed_ratio": round(rate[f"ctxlib_{main_p}"] / rate[f"hf_{main_p}"], 3), "precision": main_p,
           "threads": args.threads, "batch": args.batch, "seq": args.seq}
    print(json.dumps(res))


if __name__ == "__main__":
    main()

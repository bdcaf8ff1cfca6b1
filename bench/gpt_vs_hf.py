"""Training speed: ctxlib's GPT against transformers' GPT2LMHeadModel, same config, same batches.

Both models get the same vocabulary size, width, depth, heads, FFN width and context length, the
same batches (real next-character windows from the corpus, ctxlib.training.gpt's batching), the same
thread count and precision, and the same AdamW step. They run alternately (ctxlib, HF, ctxlib, HF, ...)
in one process so load from other jobs hits both alike. Both use PyTorch's fused
scaled_dot_product_attention (HF's attn_implementation="sdpa"; ctxlib's training path) with dropout 0.

What differs is the design: ctxlib packs the real tokens of a batch (LayerNorms, QKV, MLP and the LM
head never touch [PAD]); GPT2LMHeadModel computes every position and masks the loss with -100.
ctxlib's LM head is BERT's MLM transform (dense + GELU + LayerNorm) before the tied projection, which
costs it one extra D x D matmul per token. ctxlib's training loss takes the fused LM head + cross-entropy
(ctxlib.models.bert.linear_cross_entropy: logits made 512 rows at a time and turned straight into gradients);
`ctxlib_plain` is the same model with that switched off (FUSED_LM_HEAD = False), to show what it is worth.
Both models get the same AdamW (--adamw: torch's fused CPU kernel by default, or its for-loop default).
tokens = non-pad input tokens.

Timing: wall seconds (perf_counter) and this process's CPU seconds (process_time) per step; on a shared machine
the CPU-second rate is the steadier one. --compile adds both models under torch.compile (inductor, dynamic
shapes; ctxlib: each block, HF: the whole model), compile time reported apart (the first pass over the batches),
and is skipped with a message when no compiler works.

Why the ratio stays near 1.1 on a CPU (AVX2, fp32, 1 thread): both steps are ~73-77% matrix products (MKL,
40-70 GFLOP/s) and do the same products per position; ctxlib saves only the [PAD] positions (8,702 real of
9,888 in the 8 batches here, 1.136x) and spends one more D x D product per token (+1.3%), so its matmul time is
~1/1.12 of HF's. Even with every non-matmul op free the ratio could not pass ~1.12 / 0.73 = 1.5. torch.compile
of the blocks (inductor) gave no gain here (0.96x) after ~13 minutes of compiling.

    pip install -r bench/requirements.txt   # transformers, bench-only
    OMP_NUM_THREADS=1 python bench/gpt_vs_hf.py --threads 1 [--precision fp32|bf16|both] [--compile]
Last line: {"ctxlib_tokens_per_s":..,"hf_tokens_per_s":..,"speed_ratio":..,"speed_ratio_cpu":..,...}
"""

from __future__ import annotations

import argparse
import copy
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

    hc = GPT2Config(
        vocab_size=cfg.vocab_size,
        n_embd=cfg.hidden,
        n_layer=cfg.layers,
        n_head=cfg.heads,
        n_inner=cfg.ffn,
        n_positions=cfg.max_len,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        activation_function="gelu",
        pad_token_id=0,
    )
    return GPT2LMHeadModel._from_config(hc, attn_implementation="sdpa")


def hf_batch(b: dict) -> dict:
    # GPT2LMHeadModel shifts labels itself (logits[:, :-1] vs labels[:, 1:]); ctxlib's labels are already the
    # next character at each position, so HF gets them shifted right by one to score the same targets.
    ids, labels = b["ids"], b["labels"]
    shifted = torch.cat([torch.full_like(labels[:, :1], -100), labels[:, :-1]], 1)
    return {"input_ids": ids, "attention_mask": (ids != 0).long(), "labels": shifted}


def _compile_works() -> str | None:
    """None when torch.compile (inductor) runs here, else why not."""
    try:
        f = torch.compile(lambda x: torch.nn.functional.gelu(x) * 2.0, dynamic=True)
        x = torch.ones(4, requires_grad=True)
        f(x).sum().backward()
        return None
    except Exception as e:  # no C++ compiler, no inductor, ...
        return f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seq", type=int, default=128, help="context length of both models")
    ap.add_argument("--rounds", type=int, default=6, help="alternating rounds")
    ap.add_argument("--steps", type=int, default=3, help="timed steps per model per round")
    ap.add_argument("--precision", default="fp32", choices=["fp32", "bf16", "both"])
    ap.add_argument("--adamw", default="fused", choices=["fused", "default"], help="the same AdamW for both models")
    ap.add_argument("--no-plain", action="store_true", help="leave out ctxlib_plain (fused head off)")
    ap.add_argument("--compile", action="store_true", help="also both models under torch.compile")
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--ffn", type=int, default=1024)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    from ctxlib.models import bert as bert_model

    pars = corpus.load("all", "train")
    tok = CharTokenizer.build(pars, min_count=2)
    docs = encode_documents(pars, tok)
    cfg = BertConfig(
        vocab_size=len(tok),
        hidden=args.hidden,
        layers=args.layers,
        heads=args.heads,
        ffn=args.ffn,
        max_len=args.seq,
        dropout=0.0,
        attn_dropout=0.0,
        causal=True,
    )
    n_batches = 8
    it = iter(GptBatches(docs, tok.cls_id, args.batch, args.seq, seed=0))
    batches = [next(it) for _ in range(n_batches)]
    ours0, theirs0 = BertModel(cfg), hf_model(cfg)
    n_ours = sum(p.numel() for p in ours0.parameters())
    n_hf = sum(p.numel() for p in theirs0.parameters())
    kinds = ["ctxlib", "hf"] + ([] if args.no_plain else ["ctxlib_plain"])
    why_not = None
    if args.compile:
        why_not = _compile_works()
        if why_not is None:
            kinds += ["ctxlib_compiled", "hf_compiled"]
        else:
            print(f"--compile skipped: torch.compile does not work here ({why_not})")
    models, opts = {}, {}
    for k in kinds:  # every variant its own copy of the same initial weights
        m = copy.deepcopy(theirs0 if k.startswith("hf") else ours0).train()
        opts[k] = torch.optim.AdamW(m.parameters(), 1e-4, **({"fused": True} if args.adamw == "fused" else {}))
        if k == "ctxlib_compiled":
            for blk in m.blocks:
                blk.forward = torch.compile(blk.forward, dynamic=True)
        models[k] = torch.compile(m, dynamic=True) if k == "hf_compiled" else m

    def step(name, b, bf16):
        bert_model.FUSED_LM_HEAD = name != "ctxlib_plain"
        try:
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                m = models[name]
                loss = m(**hf_batch(b)).loss if name.startswith("hf") else m.loss(b)[0]
            opts[name].zero_grad(set_to_none=True)
            loss.backward()
            opts[name].step()
        finally:
            bert_model.FUSED_LM_HEAD = True
        return int((b["ids"] != 0).sum())

    precs = {"fp32": [False], "bf16": [True], "both": [False, True]}[args.precision]
    runs = [(n, p) for p in precs for n in kinds]
    first = {}
    for name, p in runs:  # warm-up, untimed: one pass over all batches (this is when torch.compile compiles)
        t = time.perf_counter()
        for b in batches:
            step(name, b, p)
        first[(name, p)] = time.perf_counter() - t
    times = {r: 0.0 for r in runs}
    cpu = {r: 0.0 for r in runs}
    toks = {r: 0 for r in runs}
    k = 0
    for r in range(args.rounds):
        for run in runs if r % 2 == 0 else runs[::-1]:
            for s_ in range(args.steps):
                b = batches[(k + s_) % n_batches]
                t, c = time.perf_counter(), time.process_time()
                toks[run] += step(run[0], b, run[1])
                times[run] += time.perf_counter() - t
                cpu[run] += time.process_time() - c
        k += args.steps
    key = {(n, p): f"{n}_{'bf16' if p else 'fp32'}" for n, p in runs}
    rate = {key[r]: toks[r] / times[r] for r in runs}
    rate_cpu = {key[r]: toks[r] / cpu[r] for r in runs}
    import transformers

    print(
        f"config {cfg}\nparams ctxlib {n_ours:,}, hf {n_hf:,}; batch {args.batch}, mean non-pad tokens/batch "
        f"{np.mean([int((b['ids'] != 0).sum()) for b in batches]):.0f}, threads {args.threads}, AdamW {args.adamw}, "
        f"torch {torch.__version__}, transformers {transformers.__version__}"
    )
    for r in runs:
        comp = f"   first pass (compile) {first[r]:6.1f} s" if "compiled" in r[0] else ""
        print(f"{key[r]:>22}: {rate[key[r]]:8.0f} tok/s wall, {rate_cpu[key[r]]:8.0f} tok/CPU-s{comp}")
    main_p = "fp32" if "ctxlib_fp32" in rate else "bf16"

    def ratio(a, b, r=rate):
        return round(r[f"{a}_{main_p}"] / r[f"{b}_{main_p}"], 3)

    res = {
        "ctxlib_tokens_per_s": round(rate[f"ctxlib_{main_p}"], 1),
        "hf_tokens_per_s": round(rate[f"hf_{main_p}"], 1),
        "speed_ratio": ratio("ctxlib", "hf"),
        "speed_ratio_cpu": ratio("ctxlib", "hf", rate_cpu),
        "precision": main_p,
        "threads": args.threads,
        "batch": args.batch,
        "seq": args.seq,
        "adamw": args.adamw,
    }
    if "ctxlib_plain" in kinds:
        res.update(plain_ratio=ratio("ctxlib_plain", "hf"), plain_ratio_cpu=ratio("ctxlib_plain", "hf", rate_cpu))
    if "ctxlib_compiled" in kinds:
        res.update(
            compiled_ratio_vs_hf_compiled=ratio("ctxlib_compiled", "hf_compiled"),
            compiled_ratio_vs_hf_compiled_cpu=ratio("ctxlib_compiled", "hf_compiled", rate_cpu),
            compiled_ratio_vs_hf_eager=ratio("ctxlib_compiled", "hf"),
            compiled_ratio_vs_hf_eager_cpu=ratio("ctxlib_compiled", "hf", rate_cpu),
            compile_s={n: round(first[(n, p)], 1) for n, p in runs if "compiled" in n},
        )
    elif args.compile:
        res["compile_skipped"] = why_not
    print(json.dumps(res))


if __name__ == "__main__":
    main()

"""What a bert-base-sized Transformers model costs the app on ONE CPU thread: load time, encode latency per sentence,
peak memory. The model is RANDOMLY INITIALISED (BertConfig defaults: 12 layers, 12 heads, hidden 768, ~102 M
parameters with vocab 21128, bert-base-chinese's size), so the figures are about speed and memory only: its vectors
and predictions mean nothing.

The tokenizer is a character-level WordPiece whose vocabulary is the corpus's CJK characters, most frequent first,
filled up with further CJK code points to 21128 entries. The model is saved with save_pretrained (safetensors) into a
temp folder, or into --out DIR so it can be registered and reused as hf:DIR.

    OMP_NUM_THREADS=1 python bench/hf_speed.py [--out DIR] [--n 30]

Sentences: the first 20 characters of --n held-out corpus sentences (at least 20 characters each). encode() is timed
with attention maps (the app's default) and without; batch 1 per sentence, and batch 8 per batch (reported per
sentence too). Memory: peak RSS (/proc VmHWM, else resource.getrusage; psutil's current RSS too when installed), measured in a
fresh process that only loads and encodes.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent / "tests"))

VOCAB_SIZE = 21128
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def is_cjk(c: str) -> bool:
    return "\u4e00" <= c <= "\u9fff" or "\u3400" <= c <= "\u4dbf"


def corpus_text(n: int) -> tuple[list[str], Counter]:
    """(n 20-character sentences from the test split, character counts of the train split)."""
    from ctxlib import corpus

    chars = Counter()
    for p in corpus.load("all", "train"):
        chars.update("".join(p.words))
    sents = []
    for p in corpus.load("all", "test"):
        for s in "".join(p.words).split("。"):
            if len(s) >= 20:
                sents.append(s[:20])
                if len(sents) == n:
                    return sents, chars
    return sents, chars


def build(out: Path, chars: Counter) -> float:
    """Save a random bert-base model and its character tokenizer into `out`; returns the seconds it took."""
    import torch
    from hf_tiny import wordpiece  # tests/hf_tiny.py: the same tokenizer as the tests' tiny models
    from transformers import BertConfig, BertForMaskedLM

    t = time.perf_counter()
    vocab = SPECIALS + [c for c, _ in chars.most_common() if is_cjk(c)]
    seen = set(vocab)
    vocab += [c for c in map(chr, range(0x4E00, 0xA000)) if c not in seen][: max(0, VOCAB_SIZE - len(vocab))]
    vocab = vocab[:VOCAB_SIZE]
    fast = wordpiece(vocab, max_len=512)
    torch.manual_seed(0)
    model = BertForMaskedLM(BertConfig(vocab_size=VOCAB_SIZE)).eval()
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    fast.save_pretrained(out)
    (out / "README.md").write_text(
        "---\nlicense: apache-2.0\n---\n# RANDOMLY INITIALISED bert-base-sized model "
        "(ctxlab bench/hf_speed.py): for timing only, its outputs mean nothing.\n"
    )
    return time.perf_counter() - t


def maxrss_mb() -> float:
    """Peak RSS of this process in MiB: /proc's VmHWM (Linux keeps getrusage's ru_maxrss across exec, so a child
    would report its parent's peak), else getrusage."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def rss_now_mb() -> float | None:
    try:
        import psutil
    except ImportError:
        return None
    return psutil.Process().memory_info().rss / 2**20


def timed(fn, reps) -> list[float]:
    out = []
    for r in reps:
        t = time.perf_counter()
        fn(r)
        out.append((time.perf_counter() - t) * 1000)
    return out


def p95(xs: list[float]) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, round(0.95 * (len(s) - 1)))]


def measure(folder: Path, sents: list[str], n: int) -> None:
    """Load and time in this (fresh) process, so the peak RSS is the model's and not the build's."""
    import torch

    torch.set_num_threads(1)
    rss_start = maxrss_mb()
    from ctxlib.models import hf

    t = time.perf_counter()
    enc = hf.load(str(folder))
    load_s = time.perf_counter() - t
    rss_loaded = maxrss_mb()
    enc.encode(sents[:2])  # warm-up
    rows = []
    for att in (True, False):
        batches = [[sents[(i * 8 + j) % len(sents)] for j in range(8)] for i in range(n)]
        rows.append((f"batch 1, attentions={att}", timed(lambda s, a=att: enc.encode([s], attentions=a), sents), 1))
        rows.append((f"batch 8, attentions={att}", timed(lambda b, a=att: enc.encode(b, attentions=a), batches), 8))
    print(
        f"model: RANDOMLY INITIALISED BertForMaskedLM, {enc.n_params / 1e6:.1f} M parameters, vocab {VOCAB_SIZE}, "
        f"{len(enc.layer_names) - 1} layers + embeddings, dim {enc.dim}; torch {torch.__version__}, 1 thread; "
        f"{len(sents)} sentences of 20 characters ({len(enc.encode(sents[:1])[0].tokens)} tokens with [CLS]/[SEP])"
    )
    print(f"load (hf.load, fresh process, file in the page cache): {load_s:.2f} s")
    print(f"{'encode':<28} {'median ms':>10} {'p95 ms':>8} {'ms/sentence':>12}")
    for name, xs, bs in rows:
        print(f"{name:<28} {statistics.median(xs):>10.1f} {p95(xs):>8.1f} {statistics.median(xs) / bs:>12.1f}")
    now = rss_now_mb()
    print(
        f"peak RSS: {rss_start:.0f} MiB at start (python, numpy, torch), {rss_loaded:.0f} MiB after load, "
        f"{maxrss_mb():.0f} MiB after encoding"
        + (f"; current {now:.0f} MiB" if now is not None else " (psutil not installed)")
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--out", type=Path, help="save the model here (kept; reused when it exists) instead of a temp folder"
    )
    ap.add_argument("--n", type=int, default=30, help="sentences (batch 1) and batches (batch 8) timed")
    ap.add_argument("--measure", type=Path, help=argparse.SUPPRESS)  # internal: the timing child process
    ap.add_argument("--sentences", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.measure:
        measure(args.measure, json.loads(args.sentences.read_text(encoding="utf-8")), args.n)
        return 0
    sents, chars = corpus_text(args.n)
    with tempfile.TemporaryDirectory(prefix="hf_speed_") as tmp:
        out = args.out or Path(tmp) / "bert-base-random"
        if not (out / "config.json").exists():
            build_s = build(out, chars)
            size = sum(f.stat().st_size for f in out.iterdir()) / 2**20
            print(f"build + save into {out}: {build_s:.1f} s ({size:.0f} MiB on disk)")
        sf = Path(tmp) / "sentences.json"
        sf.write_text(json.dumps(sents, ensure_ascii=False), encoding="utf-8")
        return subprocess.run(
            [sys.executable, __file__, "--measure", str(out), "--sentences", str(sf), "--n", str(args.n)], check=False
        ).returncode


if __name__ == "__main__":
    sys.exit(main())

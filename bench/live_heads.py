"""How fast a previous- or next-character attention head forms in the training page's live tiny BERT.

One run of one recipe: the live preset (ctxlib.live.PRESETS["bert"]) with the changes given on the command line,
trained on the page's built-in subset (ctxlib.live.subset, --words words, seed --seed). Every --every steps the
strongest head's previous- and next-character share is measured on the timeline's two fixed attention sentences
(viz.attention_stats.head_summaries, mean over the two sentences, the head with the largest share; uniform attention over
a sentence of ~17 tokens gives ~0.06), outside the training clock.

Two modes:
- `--steps N`: N optimizer steps (the learning-rate schedule planned for N), no time limit: comparable across
  recipes on a busy machine. "cpu_s" is the process CPU time of the training steps (probes left out): with
  OMP_NUM_THREADS=1 that is the time one free core needs.
- `--budget S`: the page's own path (ctxlib.live.train with a LiveSpec of S seconds): the steps its time budget
  allows here, the schedule planned by live.plan_steps; the shares then come from the run's timeline
  (live_results.head_formation), as the page shows them.

    OMP_NUM_THREADS=1 nice python bench/live_heads.py --steps 2000 --every 250     # the live preset
    OMP_NUM_THREADS=1 nice python bench/live_heads.py --steps 2000 --lr 1e-2 --batch 16 --max-len 64 --vocab-top 0
    OMP_NUM_THREADS=1 nice python bench/live_heads.py --budget 90                  # as the page runs it
The vocabulary: as the page, the subset's live.VOCAB_TOP most frequent characters, unless --min-count is given
(--steps) or --vocab-top 0. The results of the recipes tried are in the comment above ctxlib.live.PRESETS.
Last line: one JSON object (recipe, steps, seconds, losses, shares).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ctxlib import live, live_results  # noqa: E402
from ctxlib.training import bert as bert_train  # noqa: E402
from ctxlib.training import bert_data  # noqa: E402


def strongest(model, tok) -> dict:
    """{"prev", "next"}: the largest share of any head (mean over the fixed attention sentences), with its head."""
    from ctxlib.models.bert_encoder import BertEncoder
    from ctxlib.training.timeline import ATTENTION_SENTENCES
    from ctxlib.viz.attention_stats import head_summaries

    was = model.training
    enc = BertEncoder("live", asdict(model.cfg), {}, None, model, tok)
    try:
        with torch.no_grad():
            rows = [head_summaries(e.attentions, e.tokens) for e in enc.encode(ATTENTION_SENTENCES)]
    finally:
        model.train(was)
    out = {}
    for m in ("prev", "next"):
        mean = np.mean([[r[m] for r in rs] for rs in rows], axis=0)  # (L*H,)
        i = int(np.argmax(mean))
        out[m] = round(float(mean[i]), 4)
        out[m + "_head"] = f"L{rows[0][i]['layer']}H{rows[0][i]['head']}"
    return out


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--steps", type=int, help="optimizer steps (no time limit)")
    g.add_argument("--budget", type=float, help="seconds: the page's own run (live.train)")
    ap.add_argument("--lr", type=float)
    ap.add_argument("--warmup", type=int)
    ap.add_argument("--layers", type=int)
    ap.add_argument("--heads", type=int)
    ap.add_argument("--hidden", type=int)
    ap.add_argument("--ffn", type=int)
    ap.add_argument("--max-len", type=int, help="longest input in tokens, [CLS]/[SEP] included")
    ap.add_argument("--positions", choices=["absolute", "rope"])
    ap.add_argument("--batch", type=int)
    ap.add_argument("--min-count", type=int, help="a character rarer than this in the subset becomes [UNK]")
    ap.add_argument(
        "--vocab-top",
        type=int,
        help="keep about this many most frequent characters of the subset, as the "
        "page does (live.VOCAB_TOP; 0 = only --min-count / the preset's min_count)",
    )
    ap.add_argument("--mask-rate", type=float, help="share of positions predicted (not a preset field: this run only)")
    ap.add_argument("--no-nsp", action="store_true", help="MLM loss only (not a preset field: this run only)")
    ap.add_argument("--clip", type=float, help="max gradient norm (the trainer's default is 1.0; not a preset field)")
    ap.add_argument("--words", type=int, default=200_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--every", type=int, default=100, help="--steps: measure the heads every so many steps")
    ap.add_argument("--label", default="")
    a = ap.parse_args(argv)

    P = live.PRESETS["bert"]
    model = dict(P.model)
    for k, v in (
        ("layers", a.layers),
        ("heads", a.heads),
        ("hidden", a.hidden),
        ("ffn", a.ffn),
        ("max_len", a.max_len),
        ("positions", a.positions),
    ):
        if v is not None:
            model[k] = v
    data = dict(P.data)
    if a.batch is not None:
        data["batch"] = a.batch
    if a.min_count is not None:
        data["min_count"] = a.min_count
    if a.vocab_top is not None:
        live.VOCAB_TOP["bert"] = a.vocab_top
    top = live.VOCAB_TOP.get("bert", 0)
    if a.steps is not None and top and a.min_count is None:  # as live.train does for the built-in subset
        data["min_count"] = max(data["min_count"], live.top_k_min_count(live.subset(a.words, a.seed), top))
    preset = replace(P, model=model, data=data, lr=a.lr or P.lr, warmup=P.warmup if a.warmup is None else a.warmup)
    if a.mask_rate is not None:
        bert_data.MASK_RATE = a.mask_rate
    if a.no_nsp:
        from ctxlib.models import bert as bert_model

        orig_loss = bert_model.BertModel.loss

        def mlm_only(self, batch):
            ids = batch["ids"]
            h, rank = self.forward_packed(ids, batch["segment_ids"])
            hm = h.index_select(0, rank[batch["mlm_pos"]])
            return torch.nn.functional.cross_entropy(self.mlm_logits(hm).float(), batch["mlm_labels"]), int(h.size(0))

        bert_model.BertModel.loss = mlm_only
        assert orig_loss is not None
    if a.clip is not None:
        from ctxlib.training import trainer

        orig_tc = trainer.TrainConfig
        trainer.TrainConfig = lambda **kw: orig_tc(**{**kw, "clip": a.clip})  # bert.train imports it at call time
    recipe = {
        "label": a.label,
        "lr": preset.lr,
        "warmup": preset.warmup,
        **{k: model[k] for k in ("layers", "heads", "hidden", "ffn", "max_len", "positions")},
        "batch": data["batch"],
        "min_count": data["min_count"],
        "vocab_top": top if a.min_count is None else 0,
        "mask_rate": bert_data.MASK_RATE,
        "nsp": not a.no_nsp,
        "clip": a.clip if a.clip is not None else 1.0,
        "words": a.words,
        "seed": a.seed,
    }
    out = Path(tempfile.mkdtemp(prefix="live-heads-"))
    t_start, c_start = time.time(), time.process_time()
    res = {"recipe": recipe}
    if a.budget is not None:
        live.PRESETS["bert"] = preset
        pts = []
        spec = live.LiveSpec("bert", budget_s=a.budget, words=a.words, seed=a.seed)
        run = live.LiveRun(spec, out)
        live.train(spec, run, lambda frac, point, phase: point and pts.append(point))
        from ctxlib import replay

        rp = replay.load(str(out))
        hf = live_results.head_formation(rp)
        snaps = rp.data["snapshots"]
        res.update(
            mode="budget",
            budget_s=a.budget,
            steps=run.summary.get("steps"),
            train_s=run.summary.get("wall_s"),
            first_step_s=run.first_step_s,
            wall_s=round(time.time() - t_start, 1),
            cpu_s=round(time.process_time() - c_start, 1),
            vocab=None,
            final_train_loss=run.summary.get("final_loss"),
            final_valid_loss=snaps[-1]["valid_loss"],
            snapshots=[
                {
                    "step": s["step"],
                    "s": s["wall_s"],
                    "train": s["train_loss"],
                    "valid": s["valid_loss"],
                    "prev": hf["prev"]["shares"][i],
                    "next": hf["next"]["shares"][i],
                }
                for i, s in enumerate(snaps)
            ],
            heads={m: f"L{hf[m]['layer']}H{hf[m]['head']}" for m in ("prev", "next")},
        )
    else:
        grabbed = {}
        orig_build = bert_train.build_model

        def build(tok, model_kw, seed=0):
            m = orig_build(tok, model_kw, seed)
            grabbed.update(model=m, tok=tok)
            return m

        bert_train.build_model = build
        probes, probe_cpu, probe_wall, first = [], [0.0], [0.0], {}

        def cb(step, ema, info):
            if not first:
                first.update(cpu=time.process_time(), wall=time.time(), s=round(time.time() - t_start, 1))
            if step % a.every == 0 or step == a.steps:
                c0, w0 = time.process_time(), time.time()
                sh = strongest(grabbed["model"], grabbed["tok"])
                probes.append(
                    {
                        "step": step,
                        "train": round(float(ema), 4),
                        "cpu_s": round(c0 - first["cpu"] - probe_cpu[0], 1),
                        **sh,
                    }
                )
                probe_cpu[0] += time.process_time() - c0
                probe_wall[0] += time.time() - w0

        bert_train.train(
            replace(preset, steps=a.steps, name="bench-live-heads"),
            device="cpu",
            out=out,
            seed=a.seed,
            callback=cb,
            paragraphs=live.subset(a.words, a.seed),
            save_every=1e9,
        )
        from ctxlib import checkpoint, replay

        summary = checkpoint.read_config(out).get("summary", {})
        snaps = replay.load(str(out)).data["snapshots"]
        c_end, w_end = time.process_time(), time.time()
        res.update(
            mode="steps",
            steps=summary.get("steps"),
            first_step_s=first.get("s"),
            vocab=len(grabbed["tok"]),
            train_cpu_s=round(c_end - first["cpu"] - probe_cpu[0], 1),  # includes the timeline's snapshots
            train_wall_s=round(w_end - first["wall"] - probe_wall[0], 1),
            wall_s=round(w_end - t_start, 1),
            cpu_s=round(c_end - c_start, 1),
            final_train_loss=summary.get("final_loss"),
            final_valid_loss=snaps[-1]["valid_loss"],
            valid=[(s["step"], s["valid_loss"]) for s in snaps],
            probes=probes,
            best={m: max(probes, key=lambda p: p[m])[m] for m in ("prev", "next")},
            first_05={m: next((p["step"] for p in probes if p[m] >= 0.5), None) for m in ("prev", "next")},
        )
    import shutil

    shutil.rmtree(out, ignore_errors=True)
    print(json.dumps(res, ensure_ascii=False))
    return res


if __name__ == "__main__":
    main()

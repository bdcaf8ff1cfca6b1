"""Why does fine-tuned BERT lose to a task model without pre-training on review sentiment? A study on the
DEVELOPMENT reviews (the valid split), never the test split the eval reports.

Trains on exactly the eval's 3,000 training reviews (`tasks.task_sentences("sentiment", "train", 3000, 0)`)
and scores 1,000 valid-split reviews. Two kinds of recipe, one JSON line per recipe (dev accuracy per seed and
its mean; fine-tuning also prints the learning curve, train and valid accuracy after each epoch):

- fine-tuning all weights (`--recipes`, ";"-separated, each "key=value,..." with the keys of finetune.fine_tune:
  lr, epochs, batch, head (cls, cls_fresh, mean, mix), dropout, llrd, weight_decay, decay_all (0/1), clip, warmup, truncate
  (head, head_tail), and select=N: early stopping on N reviews carved from TRAIN, the rest trained on);
  `--untrained` also fine-tunes a randomly initialised copy (what pre-training adds);
- frozen features (`--features`): logistic probes on [CLS] and on mean-pooled characters per layer, and the
  eval's task model (heads.train_task_model: a biLSTM over its own word embeddings) with a ScalarMix of BERT's
  layers as its input or concatenated to its hidden layer: the feature-based use ELMo gets in its eval; beside
  it the same task model alone and with ELMo's and word2vec's vectors, on the same dev reviews. The BERT features
  are cached (--cache) so a rerun costs only the heads.

    python bench/bert_finetune_dev.py --features --seeds 0 1 2
    python bench/bert_finetune_dev.py --seeds 0 1 2 --recipes "lr=2e-4,epochs=4,head=mean"
    python bench/bert_finetune_dev.py --recipes "lr=1e-4,epochs=3,head=cls;lr=1e-4,epochs=3,head=mean,dropout=0.1"

Session 13, the sense-tuned BERT, valid accuracy: [CLS] 1e-4 x 3 epochs 0.786 (seed 0), mean head 2e-4 x 4 epochs
0.824 over seeds 0-2 (taken: finetune.EPOCHS/LR/HEAD), frozen features 0.821 +- 0.003; other recipes in finetune.py.
"""

import argparse
import inspect
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ctxlib.encoder import load  # noqa: E402
from ctxlib.evaluation import finetune, heads, task_eval, tasks  # noqa: E402
from ctxlib.evaluation.finetune import fine_tune, predict  # noqa: E402
from ctxlib.models.bert import BertModel  # noqa: E402

KEYS = {
    "lr": float,
    "epochs": int,
    "batch": int,
    "head": str,
    "dropout": float,
    "llrd": float,
    "weight_decay": float,
    "clip": float,
    "warmup": float,
    "truncate": str,
    "select": int,
    "decay_all": lambda v: v in ("1", "true", "True"),
}


class _Stop(Exception):
    def __init__(self, clf):
        super().__init__("stopped early")
        self.clf = clf


def parse_recipe(spec: str) -> dict:
    out = {}
    for kv in filter(None, spec.split(",")):
        k, v = kv.split("=")
        if k not in KEYS:
            raise SystemExit(f"unknown recipe key {k!r}; known: {sorted(KEYS)}")
        out[k] = KEYS[k](v)
    return out


def emit(row: dict) -> None:
    print(json.dumps(row, ensure_ascii=False), flush=True)


def tasks_epochs() -> int:
    return inspect.signature(task_eval.run_eval).parameters["epochs"].default


def features(enc, name: str, words: list, cache: Path | None) -> tuple[list, np.ndarray, np.ndarray]:
    """finetune.bert_features, kept in `cache` (keyed by split name and the checkpoint's file size/mtime)."""
    f = None
    if cache is not None:
        mp = Path(enc.path) / "model.pt"
        f = cache / f"bert_{name}_{len(words)}_{mp.stat().st_size}_{int(mp.stat().st_mtime)}.npz"
        if f.exists():
            z = np.load(f)
            return np.split(z["words"], np.cumsum(z["lengths"])[:-1]), z["cls"], z["mean"]
    t0 = time.time()
    wf, cls, mean = finetune.bert_features(enc, words)
    print(f"# features {name}: {len(words)} reviews in {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
    if f is not None:
        cache.mkdir(parents=True, exist_ok=True)
        np.savez(f, words=np.concatenate(wf), lengths=np.array([len(x) for x in wf]), cls=cls, mean=mean)
    return wf, cls, mean


def run_features(enc, wtr, ytr, wdv, ydv, seeds, cache, others: bool, screen_seeds=None, probes=True):
    from ctxlib import analysis
    from ctxlib.vocab import Vocab

    ftr, ctr, mtr = features(enc, "train", wtr, cache)
    fdv, cdv, mdv = features(enc, "valid", wdv, cache)
    names = enc.layer_names
    t0 = time.time()
    if probes:
        emit(
            {
                "frozen": "logistic probe on [CLS] per layer",
                "layers": names,
                "dev_acc": [
                    round(analysis.probe_accuracy(ctr[:, j], ytr, cdv[:, j], ydv), 4) for j in range(len(names))
                ],
                "seconds": round(time.time() - t0, 1),
            }
        )
        t0 = time.time()
        emit(
            {
                "frozen": "logistic probe on mean-pooled characters per layer",
                "layers": names,
                "dev_acc": [
                    round(analysis.probe_accuracy(mtr[:, j], ytr, mdv[:, j], ydv), 4) for j in range(len(names))
                ],
                "seconds": round(time.time() - t0, 1),
            }
        )
    wv = Vocab.build(wtr, min_count=2, max_size=20000, specials=["<pad>", "<unk>"], unk="<unk>")
    itr, idv = [wv.encode(w) for w in wtr], [wv.encode(w) for w in wdv]

    def task_model(label, feats_tr, feats_dv, use, seeds=seeds):
        std = None
        if feats_tr is not None:
            tok = tasks.Standardizer(np.concatenate([f.astype(np.float32) for f in feats_tr[:500]]))
            std = lambda f: tasks.std_one(f, tok)  # noqa: E731
        accs, mixes, t0 = [], [], time.time()
        for seed in seeds:
            m, p = heads.train_task_model(
                (itr, feats_tr, list(ytr)),
                (idv, feats_dv, list(ydv)),
                use,
                2,
                wv.itos,
                True,
                std=std,
                epochs=tasks_epochs(),
                seed=seed,
                device="cpu",
            )
            accs.append(float((np.asarray(p) == ydv).mean()))
            if m.mix is not None:
                mixes.append([round(x, 3) for x in m.mix.weights().tolist()])
        emit(
            {
                "frozen": label,
                "dev_acc": [round(x, 4) for x in accs],
                "mean": round(float(np.mean(accs)), 4),
                "sem": round(float(np.std(accs, ddof=1) / np.sqrt(len(accs))), 4) if len(accs) > 1 else None,
                "mix_weights": mixes or None,
                "seconds": round(time.time() - t0, 1),
            }
        )

    screen = screen_seeds or seeds
    task_model("task model, BERT ScalarMix as input", ftr, fdv, "input")
    if others:
        task_model("task model, no pretrained vectors", None, None, "none", screen)
        for name in ("elmo", "word2vec"):
            other = load(name)
            t0 = time.time()
            otr, odv = tasks.encode_words(other, wtr), tasks.encode_words(other, wdv)
            print(f"# {name} features in {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
            task_model(f"task model, {name} as input", otr, odv, "input", screen)
    task_model("task model, BERT ScalarMix concatenated to the biLSTM", ftr, fdv, "concat", screen)
    task_model(
        "task model, BERT top layer only as input", [f[:, -1:] for f in ftr], [f[:, -1:] for f in fdv], "input", screen
    )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="bert")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--recipes", default="", help="fine-tuning recipes, ';'-separated key=value lists (see above)")
    ap.add_argument("--curves", action="store_true", help="score the dev reviews after every epoch (costs a pass)")
    ap.add_argument(
        "--stop-after",
        type=int,
        default=0,
        help="stop each run after this many epochs of its schedule (a cheap screen; with --curves)",
    )
    ap.add_argument("--untrained", action="store_true", help="fine-tune a randomly initialised copy instead")
    ap.add_argument("--features", action="store_true", help="the frozen-feature recipes")
    ap.add_argument("--others", action="store_true", help="with --features: the task model alone, with ELMo, word2vec")
    ap.add_argument("--no-probes", action="store_true", help="with --features: skip the logistic probes")
    ap.add_argument(
        "--screen-seeds",
        type=int,
        nargs="+",
        default=None,
        help="with --features: seeds for every frozen recipe but BERT's ScalarMix input (default: --seeds)",
    )
    ap.add_argument("--cache", default="/tmp/ctxlab-bert-dev", help="folder for the frozen BERT features ('' = none)")
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    enc = load(a.model)
    wtr, ytr = tasks.task_sentences("sentiment", "train", tasks.N_TRAIN, 0)
    wdv, ydv = tasks.task_sentences("sentiment", "valid", 1000, 0)
    xtr, xdv = ["".join(w) for w in wtr], ["".join(w) for w in wdv]
    ytr, ydv = np.array(ytr), np.array(ydv)
    cut = enc.model.cfg.max_len - 2
    emit(
        {
            "train": len(xtr),
            "dev": len(xdv),
            "dev_majority": round(max(ydv.mean(), 1 - ydv.mean()), 4),
            "train_chars_median": int(np.median([len(t) for t in xtr])),
            "train_truncated_share": round(float(np.mean([len(enc.tokenizer.encode(t)) > cut for t in xtr])), 4),
        }
    )
    if a.features:
        run_features(
            enc,
            wtr,
            ytr,
            wdv,
            ydv,
            a.seeds,
            Path(a.cache) if a.cache else None,
            a.others,
            a.screen_seeds,
            not a.no_probes,
        )
    model = enc.model
    if a.untrained:
        torch.manual_seed(0)
        model = BertModel(enc.model.cfg)
    for spec in filter(None, a.recipes.split(";")):
        rec = parse_recipe(spec)
        n_sel = rec.pop("select", 0)
        accs, curves, best, t0 = [], [], [], time.time()
        for seed in a.seeds:
            tr_idx = np.arange(len(xtr))
            sel = None
            if n_sel:  # early stopping on a slice of TRAIN (seeded), trained on the rest
                perm = np.random.default_rng(1000 + seed).permutation(len(xtr))
                tr_idx, sl = perm[n_sel:], perm[:n_sel]
                sel = ([xtr[i] for i in sl], ytr[sl])
            curve = []

            def at_epoch(ep, clf, train_acc):
                point = {"epoch": ep, "train_acc": round(train_acc, 4)}
                if a.curves:
                    point["dev_acc"] = round(float((predict(clf, enc.tokenizer, xdv) == ydv).mean()), 4)
                curve.append(point)
                print(f"# seed {seed} {point}", file=sys.stderr, flush=True)
                if a.stop_after and ep >= a.stop_after:
                    raise _Stop(clf)

            stopped = False
            try:
                clf = fine_tune(
                    model,
                    enc.tokenizer,
                    [xtr[i] for i in tr_idx],
                    ytr[tr_idx],
                    seed=seed,
                    select=sel,
                    epoch_callback=at_epoch,
                    **rec,
                )
            except _Stop as stop:
                clf, stopped = stop.clf, True
                clf.eval()
            for pt, h in zip(curve, clf.history):
                if "select_acc" in h:
                    pt["select_acc"] = round(h["select_acc"], 4)
            accs.append(
                curve[-1]["dev_acc"]
                if stopped and "dev_acc" in curve[-1]
                else float((predict(clf, enc.tokenizer, xdv) == ydv).mean())
            )
            curves.append(curve)
            best.append(getattr(clf, "best_epoch", None))
        emit(
            {
                "encoder": "untrained" if a.untrained else "pretrained",
                "recipe": spec,
                "dev_acc": [round(x, 4) for x in accs],
                "mean": round(float(np.mean(accs)), 4),
                "best_epoch": best if n_sel else None,
                "curves": curves,
                "seconds": round(time.time() - t0, 1),
            }
        )


if __name__ == "__main__":
    main()

"""Why does fine-tuned BERT lose to a task model without pre-training on review sentiment? A study on the
DEVELOPMENT reviews (the valid split), never the test split the eval reports.

Trains on exactly the eval's 3,000 training reviews (`tasks.task_sentences("sentiment", "train", 3000, 0)`)
and scores 1,000 valid-split reviews, for several fine-tuning recipes (learning rate, epochs, head), each
with a few seeds, plus the same recipes on an untrained copy of the encoder (what pre-training adds).

    python bench/bert_finetune_dev.py --model bert --seeds 0 1 2
"""
import argparse
import itertools
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ctxlib.evaluation import tasks  # noqa: E402
from ctxlib.evaluation.finetune import fine_tune, predict  # noqa: E402
from ctxlib.models.bert import BertModel  # noqa: E402
from ctxlib.encoder import load  # noqa: E402


def tasks_epochs() -> int:
    import inspect

    return inspect.signature(tasks.run_eval).parameters["epochs"].default


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="bert")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--recipes", default="1e-4:3:cls,5e-5:3:cls,3e-5:5:cls,1e-4:3:mean,5e-5:5:mean,2e-4:3:mean",
                    help="lr:epochs:head, comma-separated")
    ap.add_argument("--untrained", action="store_true", help="also fine-tune a randomly initialised copy")
    ap.add_argument("--encoders", default="pretrained,untrained", help="which of the encoders to fine-tune")
    ap.add_argument("--baseline", action="store_true",
                    help="also the eval's task model without pre-training (a biLSTM over its own word embeddings)")
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    enc = load(a.model)
    wtr, ytr = tasks.task_sentences("sentiment", "train", tasks.N_TRAIN, 0)
    wdv, ydv = tasks.task_sentences("sentiment", "valid", 1000, 0)
    xtr, xdv = ["".join(w) for w in wtr], ["".join(w) for w in wdv]
    ytr, ydv = np.array(ytr), np.array(ydv)
    cut = enc.model.cfg.max_len - 2
    print(json.dumps({"train": len(xtr), "dev": len(xdv), "dev_majority": round(max(ydv.mean(), 1 - ydv.mean()), 4),
                      "train_chars_median": int(np.median([len(t) for t in xtr])),
                      "train_truncated_share": round(float(np.mean([len(t) > cut for t in xtr])), 4)}))
    models = {"pretrained": enc.model}
    if a.untrained:
        torch.manual_seed(0)
        models["untrained"] = BertModel(enc.model.cfg)
    if a.baseline:
        from ctxlib.vocab import Vocab

        wv = Vocab.build(wtr, min_count=2, max_size=20000, specials=["<pad>", "<unk>"], unk="<unk>")
        accs, t0 = [], time.time()
        for seed in a.seeds:
            _, p = tasks.train_task_model(([wv.encode(w) for w in wtr], None, list(ytr)), ([wv.encode(w) for w in wdv], None, list(ydv)),
                                          "none", 2, wv.itos, True, epochs=tasks_epochs(), seed=seed, device="cpu")
            accs.append(float((np.asarray(p) == ydv).mean()))
        print(json.dumps({"encoder": "task model, no pre-training", "dev_acc": [round(x, 4) for x in accs],
                          "mean": round(float(np.mean(accs)), 4), "seconds": round(time.time() - t0, 1)}), flush=True)
    models = {k: v for k, v in models.items() if k in a.encoders.split(",")}
    for (name, m), rec in itertools.product(models.items(), a.recipes.split(",")):
        lr, ep, head = rec.split(":")
        accs, t0 = [], time.time()
        for seed in a.seeds:
            clf = fine_tune(m, enc.tokenizer, xtr, ytr, epochs=int(ep), lr=float(lr), head=head, seed=seed)
            accs.append(float((predict(clf, enc.tokenizer, xdv) == ydv).mean()))
        print(json.dumps({"encoder": name, "lr": float(lr), "epochs": int(ep), "head": head, "dev_acc": [round(x, 4) for x in accs],
                          "mean": round(float(np.mean(accs)), 4), "seconds": round(time.time() - t0, 1)}), flush=True)


if __name__ == "__main__":
    main()

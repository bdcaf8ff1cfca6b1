"""Held-out figures on token vectors and fill-mask, for the models issue and the timeline.

- Sense sets (`sense_sets`): "examples" (the app's 12 example sets), "supplement" (the held-out
  valid + test part of the teaching supplement, never trained on) and "frozen" (sentences written
  before training for words outside the supplement, `data/eval/sense_frozen.tsv`).
- English sense sets (`ENGLISH_SENSE_SETS`, for English pretrained models; none of the project's models
  is trained on them): "english" (`data/eval/sense_en.tsv`, the sentences of the English example sets).
  `sense_sets("english")` and `sense_scores(enc, "english")` read it; `run_eval` uses it for an English model.
- `loo_centroid_accuracy` and `pair_ranking` per layer (both in analysis.py); pair ranking is the share of triples
  (a, b same sense, c other sense) with cos(a, b) > cos(a, c), which is the home page's
  two-sentence demo asked over every triple.
- `cloze`: top-1 / top-5 accuracy of fill-mask on `data/eval/cloze.tsv` (one masked character
  per everyday sentence, written before training, frozen).

`python -m ctxlib eval MODEL --task senses|cloze` writes eval_senses.json / eval_cloze.json.
"""

from __future__ import annotations

import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from ..analysis import loo_centroid_accuracy, pair_ranking

EVAL_DIR = Path(__file__).resolve().parent.parent / "data" / "eval"
SENSE_SETS = ("examples", "supplement", "frozen")
ENGLISH_SENSE_SETS = ("english",)  # kept out of SENSE_SETS: the Chinese models' `eval --task senses` skips them


def _read_tsv(path: Path) -> list[tuple[str, str, str]]:
    import unicodedata

    rows = []
    for ln in path.read_text(encoding="utf-8").splitlines():
        ln = unicodedata.normalize("NFKC", ln).strip()
        if ln and not ln.startswith("#"):
            parts = [p.strip() for p in ln.split("\t")]
            if len(parts) == 3:
                rows.append((parts[0], parts[1], parts[2]))
    return rows


def sense_sets(name: str) -> dict[str, list[tuple[str, str]]]:
    """{word: [(sentence, sense), ...]} for one of SENSE_SETS or ENGLISH_SENSE_SETS; words with fewer than 2 senses
    are dropped."""
    groups: dict[str, list[tuple[str, str]]] = defaultdict(list)
    if name == "examples":
        from ..examples import EXAMPLE_SETS

        for s in EXAMPLE_SETS.values():
            groups[s["word"]] = list(s["sentences"])
    elif name == "supplement":
        from .. import supplement

        for r in supplement.load():
            if r.split != "train":
                groups[r.word].append((r.sentence, r.sense))
    elif name in ("frozen", "english"):
        for sent, word, sense in _read_tsv(EVAL_DIR / ("sense_frozen.tsv" if name == "frozen" else "sense_en.tsv")):
            groups[word].append((sent, sense))
    else:
        raise ValueError(f"sense set must be one of {SENSE_SETS + ENGLISH_SENSE_SETS}, got {name!r}")
    return {w: v for w, v in groups.items() if len({s for _, s in v}) >= 2}


def type_mean(enc, word: str, cap: int = 200, seed: int = 0, window: int = 40) -> tuple[np.ndarray | None, int]:
    """The mean of `word`'s token vectors, (n_layers, dim), over at most `cap` of its whole-word occurrences in the
    train split of all sources (no sense labels are read; the supplement's train part is among them), each encoded
    in a window of `window` characters either side, cut so that the occurrence is the window's first `word`.
    Returns (mean, occurrences used); (None, 0) when the word never occurs. Subtracting it from a token vector leaves
    what the context moved that token away from the word's average ("word-centering")."""
    from .. import corpus

    occ, _ = corpus.occurrences(word, "all", "train", cap=cap, seed=seed)
    texts = []
    for o in occ:
        a = max(0, o.start - window)
        k = o.text.rfind(word, a, o.start + len(word) - 1)  # an earlier (or overlapping) match in the window
        if k >= 0:
            a = k + len(word)
        if o.text.find(word, a) == o.start:
            texts.append(o.text[a : o.end + window])
    if not texts:
        return None, 0
    return enc.word_vectors(texts, word).astype(np.float64).mean(0), len(texts)


def sense_scores(enc, name: str, vectors: dict | None = None, center: bool = False, cap: int = 200) -> dict:
    """Per layer, mean over words: leave-one-out nearest-centroid accuracy and pair ranking.
    `vectors` ({word: (n, L, D)}) skips the encoding (the timeline passes its own). `center` subtracts each word's
    `type_mean` (at most `cap` train-split occurrences) first; a word that never occurs is left as it is."""
    sets = sense_sets(name)
    per_word = {}
    acc_rows, pr_rows = [], []
    for w, items in sets.items():
        labels = [s for _, s in items]
        V = vectors[w] if vectors is not None else enc.word_vectors([t for t, _ in items], w)
        if center:
            mean, n_occ = type_mean(enc, w, cap=cap)
            V = V.astype(np.float64) - (mean[None] if mean is not None else 0.0)
        acc = [loo_centroid_accuracy(V[:, j], labels) for j in range(V.shape[1])]
        pr = [pair_ranking(V[:, j], labels) for j in range(V.shape[1])]
        per_word[w] = {
            "n": len(items),
            "accuracy": [round(a, 4) for a in acc],
            "pair_ranking": [round(p, 4) for p in pr],
        }
        if center:
            per_word[w]["type_occurrences"] = n_occ
        acc_rows.append(acc)
        pr_rows.append(pr)
    acc_m, pr_m = np.mean(acc_rows, 0), np.mean(pr_rows, 0)
    return {
        "set": name,
        "words": len(sets),
        **({"centered": True} if center else {}),
        "sentences": sum(len(v) for v in sets.values()),
        "accuracy": [round(float(a), 4) for a in acc_m],
        "pair_ranking": [round(float(p), 4) for p in pr_m],
        "best_accuracy": round(float(acc_m.max()), 4),
        "best_accuracy_layer": int(acc_m.argmax()),
        "best_pair_ranking": round(float(pr_m.max()), 4),
        "best_pair_ranking_layer": int(pr_m.argmax()),
        "per_word": per_word,
    }


def cloze_items() -> list[tuple[str, str, str]]:
    """(text with one [MASK], answer character, domain)."""
    return [(t, a, d) for t, a, d in _read_tsv(EVAL_DIR / "cloze.tsv") if t.count("[MASK]") == 1 and len(a) == 1]


def cloze(enc) -> dict:
    """Top-1 / top-5 of a masked-LM encoder's fill_mask on the frozen cloze set, overall and per domain."""
    from ..kinds import REGISTRY, views_of

    known = getattr(enc, "kind", None) in REGISTRY  # a kind of the registry: its family decides
    if not hasattr(enc, "fill_mask") or (known and "fill_mask" not in views_of(enc)):
        from . import TaskChoiceError

        raise TaskChoiceError(f"model '{enc.name}' is a {enc.kind} model; the cloze test needs fill-mask (BERT)")
    items = cloze_items()
    hits = defaultdict(lambda: [0, 0, 0])
    misses, ranks = [], []
    for text, ans, dom in items:
        cands = [c for c, _ in enc.fill_mask(text, topk=5)[0]["candidates"]]
        rank = cands.index(ans) + 1 if ans in cands else 0
        ranks.append(rank)
        for key in (dom, "all"):
            hits[key][0] += int(rank == 1)
            hits[key][1] += int(rank > 0)
            hits[key][2] += 1
        if rank != 1:
            misses.append({"text": text, "answer": ans, "top5": cands})
    return {
        "n": len(items),
        **{
            k: {"top1": round(v[0] / v[2], 4), "top5": round(v[1] / v[2], 4), "n": v[2]}
            for k, v in sorted(hits.items())
        },
        "misses": misses[:30],
        "ranks": ranks,
    }  # per item in cloze.tsv order: the answer's rank in the top 5, 0 when not in it


def sets_for_model(enc) -> tuple[str, ...]:
    """The sense sets a model is evaluated on: the Chinese ones, or for an English model (an hf: model whose
    vocabulary is mostly English) the English example sentences."""
    return ENGLISH_SENSE_SETS if getattr(enc, "language", "zh") == "en" else SENSE_SETS


def run_eval(model_name: str, task: str, out=None, **_) -> dict:
    """`python -m ctxlib eval MODEL --task senses|cloze`: writes eval_<task>.json in the checkpoint folder (or `out`)."""
    from .. import checkpoint
    from ..encoder import load

    t0 = time.time()
    enc = load(model_name)
    if task == "senses":
        result = {
            "task": "senses",
            "model": enc.name,
            "kind": enc.kind,
            "layer_names": enc.layer_names,
            "sets": {n: sense_scores(enc, n) for n in sets_for_model(enc)},
        }
    elif task == "cloze":
        if getattr(enc, "language", "zh") != "zh":
            from . import TaskChoiceError

            raise TaskChoiceError(f"the cloze set is Chinese; '{enc.name}' is an English model (use --task senses)")
        result = {"task": "cloze", "model": enc.name, "kind": enc.kind, **cloze(enc)}
    else:
        raise ValueError(f"task must be senses or cloze here, got {task!r}")
    result["seconds"] = round(time.time() - t0, 1)
    if out:
        path = Path(out)
    elif enc.kind == "hf":  # an outside model: its figures go beside the others', never into its own folder
        from ..registered import eval_dir

        path = eval_dir(enc.name) / f"eval_{task}.json"
    else:
        path = Path(enc.path) / f"eval_{task}.json"
    checkpoint.atomic_write_json(path, result)
    return result

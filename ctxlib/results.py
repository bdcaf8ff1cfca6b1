"""The lecture's claims against this app's own models, read from the eval files in checkpoints/<model>/.

Each claim is a list of `Comparison`s: "a should exceed b by at least `margin`". The verdict follows one rule:
every comparison holds -> "reproduced", some hold -> "partly", none -> "not_reproduced"; a claim whose files are
all missing is "missing" and names the command that writes each file. Nothing here is typed in: every figure is
read from a file when `claims()` is called (the papers' own figures live in the page's text, as the papers'
findings).

The claims (papers: Peters et al. 2018, ELMo; Devlin et al. 2019, BERT; Lan et al. 2020, ALBERT):

- static_vs_contextual: token vectors rank a same-sense pair above a different-sense pair more often than
  word2vec's one vector per word (pair ranking and sense accuracy on the held-out sense sets; each model's layer
  is chosen on the app's example sets, so the held-out figure is not the best of several tries);
- elmo_vs_word2vec: ELMo as the task model's input beats word2vec there, on POS, NER and sentiment;
- layers: lower layers syntax, higher semantics (ELMo: the mix's expected layer and the best single layer for
  POS below those for sentiment; the best layer for senses above POS's best layer);
- input_vs_concat: ELMo helps both as the task model's input and also concatenated to its hidden layer;
- bert_vs_elmo: fine-tuned BERT beats ELMo (and word2vec) on the one task both were measured on, sentiment;
- pretraining: BERT learned its two pre-training tasks (held-out MLM top-1 above always guessing the most frequent
  character; NSP accuracy above chance; true next sentences scored above random ones);
- nsp_topic: NSP learns topic rather than order (swapping A and B leaves most of the gap to a random B).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

MARGIN = 0.01  # a score comparison holds when the claimed winner is ahead by at least one point
ORDER_SHARE = 0.75  # nsp_topic: swapping keeps at least this share of the true-vs-random gap
HELDOUT_SETS = ("supplement", "frozen")  # the sense sets never trained on; "examples" chooses the layer
CONTEXTUAL = ("elmo", "bert", "gpt")
TASKS = ("pos", "ner", "sentiment")
VERDICTS = ("reproduced", "partly", "not_reproduced", "missing")
CLAIMS = ("static_vs_contextual", "elmo_vs_word2vec", "layers", "input_vs_concat", "bert_vs_elmo", "pretraining",
          "nsp_topic")


@dataclass
class Comparison:
    """`a` (the side the claim says is larger) against `b`, on `measure` in `where` (keys the page translates)."""

    measure: str
    where: str
    a: str
    a_value: float
    b: str
    b_value: float
    margin: float = MARGIN

    @property
    def diff(self) -> float:
        return self.a_value - self.b_value

    @property
    def holds(self) -> bool:
        return self.diff >= self.margin - 1e-9


@dataclass
class ClaimResult:
    key: str
    comparisons: list[Comparison] = field(default_factory=list)
    figures: dict = field(default_factory=dict)  # named figures for the page's figure and why lines
    files: list[str] = field(default_factory=list)  # the files read, relative to the checkpoint folder's parent
    missing: list[tuple[str, str]] = field(default_factory=list)  # (file, the command that writes it)
    notes: list[tuple[str, dict]] = field(default_factory=list)  # (message key, its values): what the figures rest on

    @property
    def verdict(self) -> str:
        return verdict(self.comparisons)

    @property
    def held(self) -> int:
        return sum(c.holds for c in self.comparisons)


def verdict(comparisons: list[Comparison]) -> str:
    """reproduced (all hold), partly (some), not_reproduced (none), missing (nothing to compare)."""
    if not comparisons:
        return "missing"
    held = sum(c.holds for c in comparisons)
    return "reproduced" if held == len(comparisons) else "partly" if held else "not_reproduced"


def eval_command(model: str, task: str) -> str:
    return f"python -m ctxlib eval {model} --task {task}"


class _Reader:
    """Reads checkpoints/<model>/<file> once, and records what a claim read or missed."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self._cache: dict[tuple[str, str], dict | None] = {}

    def get(self, claim: ClaimResult, model: str, name: str, command: str) -> dict | None:
        key = (model, name)
        if key not in self._cache:
            try:
                d = json.loads((self.root / model / name).read_text(encoding="utf-8"))
                self._cache[key] = d if isinstance(d, dict) else None
            except (OSError, ValueError):
                self._cache[key] = None
        rel = f"{self.root.name}/{model}/{name}"
        d = self._cache[key]
        if d is None:
            if (rel, command) not in claim.missing:
                claim.missing.append((rel, command))
        elif rel not in claim.files:
            claim.files.append(rel)
        return d


def _num(d: dict | None, *path):
    for k in path:
        if not isinstance(d, dict) or d.get(k) is None:
            return None
        d = d[k]
    return d if isinstance(d, (int, float)) and not isinstance(d, bool) else None


def _argmax(xs) -> int | None:
    return max(range(len(xs)), key=lambda i: xs[i]) if isinstance(xs, list) and xs else None


def _layer_name(d: dict, j: int | None) -> str | None:
    names = d.get("layer_names") or []
    return names[j] if j is not None and j < len(names) else None


def _senses_layer(d: dict) -> int | None:
    """The layer a model's held-out sense figures are read at: its best pair ranking on the example sets."""
    return _argmax((d.get("sets", {}).get("examples") or {}).get("pair_ranking"))


def _senses_at(d: dict, measure: str, where: str, layer: int | None):
    xs = (d.get("sets", {}).get(where) or {}).get(measure)
    return round(float(xs[layer]), 4) if isinstance(xs, list) and layer is not None and layer < len(xs) else None


def _static_vs_contextual(r: _Reader) -> ClaimResult:
    c = ClaimResult("static_vs_contextual")
    evals = {m: r.get(c, m, "eval_senses.json", eval_command(m, "senses")) for m in ("word2vec", *CONTEXTUAL)}
    w = evals["word2vec"]
    for m in CONTEXTUAL:
        d = evals[m]
        if d is None:
            continue
        layer = _senses_layer(d)
        c.figures[f"{m}_layer"] = _layer_name(d, layer)
        for where in HELDOUT_SETS:
            for measure in ("pair_ranking", "accuracy"):
                a = _senses_at(d, measure, where, layer)
                if measure == "pair_ranking":
                    c.figures[f"{m}_{where}"] = a
                b = _senses_at(w, measure, where, 0) if w else None
                if a is not None and b is not None:
                    c.comparisons.append(Comparison(measure, where, m, a, "word2vec", b))
    if w:
        for where in HELDOUT_SETS:
            c.figures[f"word2vec_{where}"] = _senses_at(w, "pair_ranking", where, 0)
    for m in CONTEXTUAL:  # a model trained with sense labels after pre-training: its figures say so
        t = _sense_tune(r.root / m)
        if t is not None and evals.get(m) is not None:
            c.notes.append(("results.sense_tuned", {"model": m.upper() if m != "elmo" else "ELMo",
                                                    "steps": (t.get("config") or {}).get("steps", "?"),
                                                    "words": t.get("words", "?")}))
    return c


def _sense_tune(folder: Path) -> dict | None:
    """The `sense_tune` record of a checkpoint's config.json summary, or None (also when it cannot be read)."""
    from . import checkpoint
    from .records import sense_tune_of

    try:
        return sense_tune_of(checkpoint.read_config(folder).get("summary"))
    except (checkpoint.CheckpointError, OSError):
        return None


def _elmo_tasks(r: _Reader, c: ClaimResult, tasks=TASKS) -> dict[str, dict]:
    return {t: d for t in tasks if (d := r.get(c, "elmo", f"eval_{t}.json", eval_command("elmo", t))) is not None}


def _elmo_vs_word2vec(r: _Reader) -> ClaimResult:
    c = ClaimResult("elmo_vs_word2vec")
    for t, d in _elmo_tasks(r, c).items():
        a, b = _num(d, "score"), _num(d, "word2vec_score")
        if a is not None and b is not None:
            c.comparisons.append(Comparison("task_score", t, "elmo", a, "word2vec", b))
            c.figures[f"{t}_elmo"], c.figures[f"{t}_word2vec"] = a, b
            n = _num(d, "n_test")
            if n and t == "sentiment":  # one standard error of an accuracy on n test items
                c.figures["sentiment_se"] = round((a * (1 - a) / n) ** 0.5, 4)
    gains = [x.diff for x in c.comparisons]
    if gains:
        c.figures.update(gain_min=round(min(gains), 4), gain_max=round(max(gains), 4))
    return c


def _layers(r: _Reader) -> ClaimResult:
    c = ClaimResult("layers")
    ev = _elmo_tasks(r, c, ("pos", "sentiment"))
    pos, sent = ev.get("pos"), ev.get("sentiment")
    if pos and sent:
        a, b = _num(sent, "expected_layer"), _num(pos, "expected_layer")
        c.figures.update(sentiment_expected=a, pos_expected=b)
        if a is not None and b is not None:
            c.comparisons.append(Comparison("expected_layer", "sentiment_vs_pos", "sentiment", a, "pos", b))
        a, b = _argmax(sent.get("per_layer_score")), _argmax(pos.get("per_layer_score"))
        c.figures.update(sentiment_best=_layer_name(sent, a), pos_best=_layer_name(pos, b))
        if a is not None and b is not None:
            c.comparisons.append(Comparison("best_layer", "sentiment_vs_pos", "sentiment", a, "pos", b, margin=1))
    senses = r.get(c, "elmo", "eval_senses.json", eval_command("elmo", "senses"))
    if senses and pos:
        rows = [senses.get("sets", {}).get(s, {}).get("pair_ranking") for s in HELDOUT_SETS]
        if all(isinstance(x, list) and x for x in rows):
            mean = [sum(col) / len(col) for col in zip(*rows)]
            a, b = _argmax(mean), _argmax(pos.get("per_layer_score"))
            c.figures["senses_best"] = _layer_name(senses, a)
            if b is not None:
                c.comparisons.append(Comparison("best_layer", "senses_vs_pos", "senses", a, "pos", b, margin=1))
    return c


def _input_vs_concat(r: _Reader) -> ClaimResult:
    c = ClaimResult("input_vs_concat")
    for t, d in _elmo_tasks(r, c).items():
        base, inp, cat = _num(d, "baseline_score"), _num(d, "input_score"), _num(d, "concat_score")
        if None in (base, inp, cat):
            continue
        c.comparisons += [Comparison("task_score", t, "input", inp, "none", base),
                          Comparison("task_score", t, "concat", cat, "none", base)]
        c.figures.update({f"{t}_input": inp, f"{t}_concat": cat, f"{t}_none": base, f"{t}_delta": round(cat - inp, 4)})
    return c


def _bert_vs_elmo(r: _Reader) -> ClaimResult:
    c = ClaimResult("bert_vs_elmo")
    bert = r.get(c, "bert", "eval_sentiment.json", eval_command("bert", "sentiment"))
    elmo = r.get(c, "elmo", "eval_sentiment.json", eval_command("elmo", "sentiment"))
    cfg = r.get(c, "bert", "config.json", "python -m ctxlib train bert")
    b = _num(bert, "score")
    if b is not None and elmo is not None:
        for other, key in (("elmo", "score"), ("word2vec", "word2vec_score")):
            if (v := _num(elmo, key)) is not None:
                c.figures[other] = v
                c.comparisons.append(Comparison("task_score", "sentiment", "bert", b, other, v))
    if cfg:
        s = cfg.get("summary") or {}
        c.figures.update(layers=_num(cfg, "config", "layers"), hidden=_num(cfg, "config", "hidden"),
                         steps=_num(s, "steps"), tokens_m=round(_num(s, "tokens_seen") / 1e6, 1) if _num(s, "tokens_seen") else None,
                         minutes=round(_num(s, "wall_s") / 60) if _num(s, "wall_s") else None,
                         device=str(s["device"]).upper() if s.get("device") else None)
    if bert:
        # the eval's score is the way chosen on the valid reviews (score_from); older files only fine-tuned
        tuned = _num(bert, "finetune_score") if "finetune_score" in bert else (b if bert.get("score_from") in (None, "finetune") else None)
        c.figures.update(n_train=_num(bert, "n_train"), bert=b, bert_finetuned=tuned, bert_features=_num(bert, "input_score"))
    return c


def _unigram_top1(vocab: dict | None) -> float | None:
    """Top-1 of always guessing the most frequent non-special token (training counts in vocab.json)."""
    try:
        n_special = len(vocab["specials"])
        counts = [int(x) for x in vocab["counts"][n_special:]]
        return round(max(counts) / sum(counts), 4) if counts and sum(counts) else None
    except (KeyError, TypeError, ValueError):
        return None


def _pretraining(r: _Reader) -> ClaimResult:
    c = ClaimResult("pretraining")
    cfg = r.get(c, "bert", "config.json", "python -m ctxlib train bert")
    valid = (cfg or {}).get("summary", {}).get("valid") or {}
    mlm, nsp_acc = _num(valid, "mlm_top1"), _num(valid, "nsp_acc")
    vocab = r.get(c, "bert", "vocab.json", "python -m ctxlib train bert") if cfg else None
    base = _unigram_top1(vocab)
    if mlm is not None and base is not None:
        c.comparisons.append(Comparison("mlm_top1", "valid", "bert", mlm, "most_frequent", base))
    if nsp_acc is not None:
        c.comparisons.append(Comparison("nsp_acc", "valid", "bert", nsp_acc, "chance", 0.5))
    c.figures.update(mlm_top1=mlm, mlm_top5=_num(valid, "mlm_top5"), nsp_acc=nsp_acc, unigram=base,
                     n_examples=_num(valid, "n_examples"))
    nsp = r.get(c, "bert", "eval_nsp.json", eval_command("bert", "nsp"))
    t, rnd = _num(nsp, "rows", "true", "mean_p"), _num(nsp, "rows", "random", "mean_p")
    c.figures.update(p_true=t, p_random=rnd)
    if t is not None and rnd is not None:
        c.comparisons.append(Comparison("mean_p_is_next", "nsp_pairs", "true", t, "random", rnd))
    return c


def _nsp_topic(r: _Reader) -> ClaimResult:
    c = ClaimResult("nsp_topic")
    nsp = r.get(c, "bert", "eval_nsp.json", eval_command("bert", "nsp"))
    if nsp is None:
        return c
    p = {o: _num(nsp, "rows", o, "mean_p") for o in ("true", "swapped", "random")}
    share = _num(nsp, "order_share")
    if None in p.values() or share is None:
        return c
    c.comparisons += [Comparison("mean_p_is_next", "nsp_pairs", "true", p["true"], "random", p["random"]),
                      Comparison("order_share", "nsp_pairs", "swapped", share, "threshold", ORDER_SHARE, margin=0.0)]
    c.figures.update(n=_num(nsp, "n"), share=share, threshold=ORDER_SHARE, **{f"p_{o}": v for o, v in p.items()})
    return c


def claims(root=None) -> list[ClaimResult]:
    """Every claim of CLAIMS, in order, read from `root` (default: the checkpoint folder). Missing or unreadable
    files never raise: the claim lists them with the commands that write them."""
    from . import checkpoint

    r = _Reader(Path(root) if root is not None else checkpoint.CHECKPOINT_DIR)
    build = {"static_vs_contextual": _static_vs_contextual, "elmo_vs_word2vec": _elmo_vs_word2vec, "layers": _layers,
             "input_vs_concat": _input_vs_concat, "bert_vs_elmo": _bert_vs_elmo, "pretraining": _pretraining,
             "nsp_topic": _nsp_topic}
    return [build[k](r) for k in CLAIMS]

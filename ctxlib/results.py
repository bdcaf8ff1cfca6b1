"""The lecture's claims against this app's own models, read from the eval files in checkpoints/<model>/.

Each claim is a fixed list of measures (`verdict.Comparison`): "side a, the paper's winner, should be larger than
side b", each side one figure read from a named file and key (or a fixed number such as chance). ctxlib.verdict
judges each measure (win / tie inside the margin / loss / missing) and the claim (reproduced / partly /
not_reproduced / incomplete / missing). Nothing here is typed in: every figure is read from a file when `claims()`
is called (the papers' own figures live in the page's text, as the papers' findings).

The claims and their measures (papers: Peters et al. 2018, ELMo; Devlin et al. 2019, BERT; Lan et al. 2020, ALBERT):

- static_vs_contextual: ELMo, BERT and GPT each against word2vec, pair ranking and sense accuracy on the two
  held-out sense sets (12 measures; each contextual model's layer is the one best on the app's example sets, so
  the held-out figure is not the best of several tries; word2vec has one layer);
- elmo_vs_word2vec: the ELMo task model's score against the same task model with word2vec, on POS, NER, sentiment;
- layers: ELMo's mix leans higher for sentiment than for POS (expected layer); sentiment's best single layer is
  above POS's; the best layer for senses (mean held-out pair ranking) is above POS's;
- input_vs_concat: ELMo in the input beats no ELMo, and ELMo in the input and concatenated beats no ELMo, per task;
- bert_vs_elmo: BERT's sentiment score against ELMo's (the one task both were measured on); word2vec's figure is
  shown for reference and is not a measure of this claim;
- pretraining: MLM top-1 above always guessing the most frequent character, NSP accuracy above chance, true next
  sentences scored above random ones;
- nsp_topic: true above random second sentences, and swapping A and B keeps at least ORDER_SHARE of that gap.

Outside models (`extra_dirs`): folders of eval files of models this app did not train (a large pretrained model
evaluated with the same commands, say). Their figures are read with the same file and key as the measured model's
side and set against the same other side, as `ClaimResult.outside`; they never enter a verdict.

The BERT claims (bert_vs_elmo, pretraining, nsp_topic) are built in results_bert.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from pathlib import Path

from . import kinds
from .results_bert import bert_vs_elmo, nsp_topic, pretraining
from .results_files import (
    ORDER_SHARE,
    ClaimResult,
    Fig,
    Reader,
    compare,
    eval_command,
    num,
    outside_files,
    parse_extra,
    task_fig,
)
from .verdict import LAYER_MARGIN, MARGIN, Comparison, best_layers, verdict

__all__ = [
    "CLAIMS",
    "MARGIN",
    "ORDER_SHARE",
    "ClaimResult",
    "Comparison",
    "claims",
    "outside_files",
    "parse_extra",
    "verdict",
]

HELDOUT_SETS = ("supplement", "frozen")  # the sense sets never trained on; "examples" chooses the layer
CONTEXTUAL = ("elmo", "bert", "gpt")
TASKS = ("pos", "ner", "sentiment")
CLAIMS = (
    "static_vs_contextual",
    "elmo_vs_word2vec",
    "layers",
    "input_vs_concat",
    "bert_vs_elmo",
    "pretraining",
    "nsp_topic",
)
EXTRA_ENV = "CTXLAB_EXTRA_EVALS"  # the page's outside models: "name=folder;name=folder"


def _argmax(xs) -> int | None:
    return (best_layers(xs) or (None,))[0]


def _layer_name(d: dict | None, j: int | None) -> str | None:
    names = (d or {}).get("layer_names")
    ok = isinstance(names, list) and j is not None and j < len(names) and isinstance(names[j], str)
    return names[j] if ok else None


def _best_name(d: dict | None, scores) -> str | tuple | None:
    """The best layer's name; the names of every tied-best layer (a tuple) when several are within the margin."""
    best = best_layers(scores)
    if d is None or best is None:
        return None
    top, lo, hi = best
    tied = [j for j in range(lo, hi + 1) if scores[top] - scores[j] < MARGIN - 1e-9]
    return _layer_name(d, top) if len(tied) == 1 else tuple(_layer_name(d, j) or str(j) for j in tied)


def _senses_layer(d: dict) -> int | None:
    """The layer a model's held-out sense figures are read at: its best pair ranking on the example sets."""
    return _argmax(_set(d, "examples").get("pair_ranking"))


def _set(d: dict | None, name: str) -> dict:
    """The eval file's sense set `name` ({} when the file has no such table)."""
    sets = d.get("sets") if isinstance(d, dict) else None
    found = sets.get(name) if isinstance(sets, dict) else None
    return found if isinstance(found, dict) else {}


def _senses_at(measure: str, where: str, d: dict | None, layer: int | None = -1):
    """`measure` on sense set `where` at `layer` (default: the one best on the example sets)."""
    if d is None:
        return None
    layer = _senses_layer(d) if layer == -1 else layer
    xs = _set(d, where).get(measure)
    ok = isinstance(xs, list) and layer is not None and layer < len(xs) and isinstance(xs[layer], (int, float))
    return round(float(xs[layer]), 4) if ok else None


def _senses_fig(m: str, measure: str, where: str) -> Fig:
    if m == "word2vec":
        return Fig(
            m,
            m,
            "eval_senses.json",
            f"/sets/{where}/{measure}[0]",
            partial(_senses_at, measure, where, layer=0),
            eval_command(m, "senses"),
        )
    return Fig(
        m,
        m,
        "eval_senses.json",
        f"/sets/{where}/{measure}[argmax /sets/examples/pair_ranking]",
        partial(_senses_at, measure, where),
        eval_command(m, "senses"),
    )


def _static_vs_contextual(r: Reader) -> ClaimResult:
    c = ClaimResult("static_vs_contextual")
    for m in CONTEXTUAL:
        for where in HELDOUT_SETS:
            for measure in ("pair_ranking", "accuracy"):
                cmp = compare(
                    r,
                    c,
                    measure,
                    where,
                    _senses_fig(m, measure, where),
                    _senses_fig("word2vec", measure, where),
                    outside=m == CONTEXTUAL[0],
                )
                if measure == "pair_ranking":
                    c.figures[f"{m}_{where}"], c.figures[f"word2vec_{where}"] = cmp.a_value, cmp.b_value
        d = r.get(c, m, "eval_senses.json", eval_command(m, "senses"))
        c.figures[f"{m}_layer"] = _layer_name(d, _senses_layer(d)) if d else None
        t = _sense_tune(r.root / m)  # a model trained with sense labels after pre-training: its figures say so
        if t is not None and d is not None:
            c.notes.append(
                (
                    "results.sense_tuned",
                    {
                        "model": m.upper() if m != "elmo" else "ELMo",
                        "steps": (t.get("config") or {}).get("steps", "?"),
                        "words": t.get("words", "?"),
                    },
                )
            )
    return c


def _sense_tune(folder: Path) -> dict | None:
    """The `sense_tune` record of a checkpoint's config.json summary, or None (also when it cannot be read)."""
    from . import checkpoint
    from .records import sense_tune_of

    try:
        return sense_tune_of(checkpoint.read_config(folder).get("summary"))
    except (checkpoint.CheckpointError, OSError):
        return None


def _elmo_vs_word2vec(r: Reader) -> ClaimResult:
    c = ClaimResult("elmo_vs_word2vec")
    for t in TASKS:
        cmp = compare(
            r,
            c,
            "task_score",
            t,
            task_fig("elmo", "elmo", t, "score"),
            task_fig("word2vec", "elmo", t, "word2vec_score"),
            outside=True,
        )
        c.figures[f"{t}_elmo"], c.figures[f"{t}_word2vec"] = cmp.a_value, cmp.b_value
    n, a = (
        num(r.get(c, "elmo", "eval_sentiment.json", eval_command("elmo", "sentiment")), "n_test"),
        c.figures.get("sentiment_elmo"),
    )
    if n and a is not None:  # one standard error of an accuracy on n test items
        c.figures["sentiment_se"] = round((a * (1 - a) / n) ** 0.5, 4)
    gains = [x.diff for x in c.measured]
    if gains:
        c.figures.update(gain_min=round(min(gains), 4), gain_max=round(max(gains), 4))
    return c


def _mean_heldout(d: dict | None):
    rows = [_set(d, s).get("pair_ranking") for s in HELDOUT_SETS]
    if not all(isinstance(x, list) and x and all(isinstance(v, (int, float)) for v in x) for x in rows):
        return None
    return [sum(col) / len(col) for col in zip(*rows)]


def _best_fig(side: str, task: str) -> Fig:
    if task == "senses":
        return Fig(
            side,
            "elmo",
            "eval_senses.json",
            "argmax (/sets/supplement/pair_ranking + /sets/frozen/pair_ranking)",
            lambda d: best_layers(_mean_heldout(d)),
            eval_command("elmo", "senses"),
        )
    return Fig(
        side,
        "elmo",
        f"eval_{task}.json",
        "argmax /per_layer_score",
        lambda d: best_layers(d.get("per_layer_score")),
        eval_command("elmo", task),
    )


def _layers(r: Reader) -> ClaimResult:
    c = ClaimResult("layers")
    cmp = compare(
        r,
        c,
        "expected_layer",
        "sentiment_vs_pos",
        task_fig("sentiment", "elmo", "sentiment", "expected_layer"),
        task_fig("pos", "elmo", "pos", "expected_layer"),
    )
    c.figures.update(sentiment_expected=cmp.a_value, pos_expected=cmp.b_value)
    for where, side in (("sentiment_vs_pos", "sentiment"), ("senses_vs_pos", "senses")):
        cmp = compare(r, c, "best_layer", where, _best_fig(side, side), _best_fig("pos", "pos"), margin=LAYER_MARGIN)
    for task in ("pos", "sentiment", "senses"):
        d = r.get(c, "elmo", f"eval_{task}.json", eval_command("elmo", task))
        scores = _mean_heldout(d) if task == "senses" else (d or {}).get("per_layer_score")
        c.figures[f"{task}_best"] = _best_name(d, scores)
    return c


def _input_vs_concat(r: Reader) -> ClaimResult:
    c = ClaimResult("input_vs_concat")
    for t in TASKS:
        base = task_fig("none", "elmo", t, "baseline_score")
        inp = compare(r, c, "task_score", t, task_fig("input", "elmo", t, "input_score"), base)
        cat = compare(r, c, "task_score", t, task_fig("concat", "elmo", t, "concat_score"), base)
        delta = round(cat.a_value - inp.a_value, 4) if None not in (cat.a_value, inp.a_value) else None
        c.figures.update(
            {f"{t}_input": inp.a_value, f"{t}_concat": cat.a_value, f"{t}_none": inp.b_value, f"{t}_delta": delta}
        )
    return c


def claims(root=None, extra_dirs: Mapping[str, Path] | None = None) -> list[ClaimResult]:
    """Every claim of CLAIMS, in order, read from `root` (default: the checkpoint folder). Missing or unreadable
    files never raise: the claim's measures say "missing" and the claim lists the commands that write the files.
    `extra_dirs` ({name: folder of eval files}) adds outside models' figures beside the measured models; a name
    of a shipped model raises ValueError (its figures would be mistaken for ours)."""
    from . import checkpoint

    clash = sorted(set(extra_dirs or {}) & set(kinds.names(shipped=True)))
    if clash:
        raise ValueError(f"outside model named like a shipped one: {', '.join(clash)}")
    r = Reader(Path(root) if root is not None else checkpoint.CHECKPOINT_DIR, extra_dirs)
    build = {
        "static_vs_contextual": _static_vs_contextual,
        "elmo_vs_word2vec": _elmo_vs_word2vec,
        "layers": _layers,
        "input_vs_concat": _input_vs_concat,
        "bert_vs_elmo": bert_vs_elmo,
        "pretraining": pretraining,
        "nsp_topic": nsp_topic,
    }
    return [build[k](r) for k in CLAIMS]

"""Evaluation: task heads on frozen features (`tasks`, the heads themselves in `heads`), BERT's sentiment
fine-tuning (`finetune`), the frozen held-out sense and cloze sets (`heldout`) and BERT's next-sentence head on
held-out pairs, true, swapped and random (`nsp`).

`run_eval(model_name, task, **kw)` is the one entry point (`python -m ctxlib eval`): it picks the evaluation by the
task and, for sentiment, by the model's kind, runs it and returns the result it wrote to eval_<task>.json.
"""

from __future__ import annotations

from typing import Callable


class TaskChoiceError(ValueError):
    """The checkpoint cannot be read, or the task does not apply to its kind of model; nothing was run."""


def _pick(model_name, task: str) -> Callable[..., dict]:
    from .. import checkpoint

    if str(model_name).startswith("hf:"):  # a Transformers model: the held-out sense and cloze sets only
        if task not in ("senses", "cloze"):
            raise TaskChoiceError(f"a Transformers model ({model_name}) is evaluated with --task senses or cloze")
        from .heldout import run_eval

        return run_eval
    try:
        kind = checkpoint.read_config(model_name)["kind"]
    except checkpoint.CheckpointError as e:
        raise TaskChoiceError(str(e)) from e
    if task in ("senses", "cloze"):
        if task == "cloze" and kind != "bert":
            raise TaskChoiceError(f"the cloze test needs a masked LM; '{model_name}' is a {kind} model")
        from .heldout import run_eval
    elif task == "nsp":
        if kind != "bert":
            raise TaskChoiceError(f"the NSP test needs BERT's next-sentence head; '{model_name}' is a {kind} model")
        from .nsp import run_eval
    elif kind == "bert" and task != "sentiment":
        raise TaskChoiceError("BERT's task evaluation is --task sentiment (and senses, cloze, nsp)")
    elif kind == "bert":
        from .bert_sentiment import run_eval
    else:
        from .task_eval import run_eval
    return run_eval


def run_eval(model_name, task: str, **kw) -> dict:
    """senses, cloze: `heldout.run_eval`; nsp (BERT): `nsp.run_eval`; sentiment on BERT: `bert_sentiment.run_eval` (fine-tuning); pos, ner, sentiment
    on word2vec or ELMo: `task_eval.run_eval` (task heads on frozen features). `kw` (device, seed, out, ...) go to it.
    Raises TaskChoiceError before running anything when the checkpoint or the task does not fit. The result as
    the file holds it (a typed record, bert_sentiment.SentimentEval, as its JSON)."""
    result = _pick(model_name, task)(model_name, task, **kw)
    return result.to_json() if hasattr(result, "to_json") else result

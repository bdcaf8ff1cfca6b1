"""The lecture's BERT claims against this app's own models (see ctxlib/results.py for the rule and the other
claims): bert_vs_elmo (BERT's sentiment score against ELMo's), pretraining (MLM top-1 above the most frequent
character, NSP accuracy above chance, true next sentences scored above random ones) and nsp_topic (swapping A and B
keeps at least ORDER_SHARE of the true-vs-random gap). Every figure is read from a file when a claim is built.
"""

from __future__ import annotations

from .results_files import ORDER_SHARE, ClaimResult, Fig, Reader, compare, eval_command, fixed, num, read_at, task_fig


def bert_vs_elmo(r: Reader) -> ClaimResult:
    c = ClaimResult("bert_vs_elmo")
    cmp = compare(
        r,
        c,
        "task_score",
        "sentiment",
        task_fig("bert", "bert", "sentiment", "score"),
        task_fig("elmo", "elmo", "sentiment", "score"),
        outside=True,
    )
    elmo = r.get(c, "elmo", "eval_sentiment.json", eval_command("elmo", "sentiment"))
    c.figures.update(
        bert=cmp.a_value,
        elmo=cmp.b_value,
        word2vec=num(elmo, "word2vec_score"),  # reference only
        lead=round(cmp.diff, 4) if cmp.measured else None,
    )
    cfg = r.get(c, "bert", "config.json", "python -m ctxlib train bert")
    if cfg:
        s = cfg.get("summary") if isinstance(cfg.get("summary"), dict) else {}
        c.figures.update(
            layers=num(cfg, "config", "layers"),
            hidden=num(cfg, "config", "hidden"),
            steps=num(s, "steps"),
            tokens_m=round(num(s, "tokens_seen") / 1e6, 1) if num(s, "tokens_seen") else None,
            minutes=round(num(s, "wall_s") / 60) if num(s, "wall_s") else None,
            device=str(s["device"]).upper() if s.get("device") else None,
        )
    bert = r.get(c, "bert", "eval_sentiment.json", eval_command("bert", "sentiment"))
    if bert:
        # the eval's score is the way chosen on the valid reviews (score_from); older files only fine-tuned
        b = cmp.a_value
        tuned = (
            num(bert, "finetune_score")
            if "finetune_score" in bert
            else (b if bert.get("score_from") in (None, "finetune") else None)
        )
        c.figures.update(n_train=num(bert, "n_train"), bert_finetuned=tuned, bert_features=num(bert, "input_score"))
    return c


def _unigram_top1(vocab: dict | None) -> float | None:
    """Top-1 of always guessing the most frequent non-special token (training counts in vocab.json)."""
    try:
        n_special = len(vocab["specials"])
        counts_ = [int(x) for x in vocab["counts"][n_special:]]
        return round(max(counts_) / sum(counts_), 4) if counts_ and sum(counts_) else None
    except (KeyError, TypeError, ValueError):
        return None


_TRAIN_BERT = "python -m ctxlib train bert"


def _nsp_fig(side: str, *path) -> Fig:
    return Fig(side, "bert", "eval_nsp.json", "/" + "/".join(path), read_at(*path), eval_command("bert", "nsp"))


def pretraining(r: Reader) -> ClaimResult:
    c = ClaimResult("pretraining")
    mlm = compare(
        r,
        c,
        "mlm_top1",
        "valid",
        Fig(
            "bert",
            "bert",
            "config.json",
            "/summary/valid/mlm_top1",
            read_at("summary", "valid", "mlm_top1"),
            _TRAIN_BERT,
        ),
        Fig("most_frequent", "bert", "vocab.json", "/counts", _unigram_top1, _TRAIN_BERT),
    )
    nsp = compare(
        r,
        c,
        "nsp_acc",
        "valid",
        Fig(
            "bert", "bert", "config.json", "/summary/valid/nsp_acc", read_at("summary", "valid", "nsp_acc"), _TRAIN_BERT
        ),
        fixed("chance", 0.5),
    )
    p = compare(
        r,
        c,
        "mean_p_is_next",
        "nsp_pairs",
        _nsp_fig("true", "rows", "true", "mean_p"),
        _nsp_fig("random", "rows", "random", "mean_p"),
    )
    cfg = r.get(c, "bert", "config.json", _TRAIN_BERT)
    c.figures.update(
        mlm_top1=mlm.a_value,
        mlm_top5=num(cfg, "summary", "valid", "mlm_top5"),
        nsp_acc=nsp.a_value,
        unigram=mlm.b_value,
        n_examples=num(cfg, "summary", "valid", "n_examples"),
        p_true=p.a_value,
        p_random=p.b_value,
    )
    return c


def nsp_topic(r: Reader) -> ClaimResult:
    c = ClaimResult("nsp_topic")
    p = compare(
        r,
        c,
        "mean_p_is_next",
        "nsp_pairs",
        _nsp_fig("true", "rows", "true", "mean_p"),
        _nsp_fig("random", "rows", "random", "mean_p"),
    )
    share = compare(
        r,
        c,
        "order_share",
        "nsp_pairs",
        _nsp_fig("swapped", "order_share"),
        fixed("threshold", ORDER_SHARE),
        margin=0.0,
    )
    nsp = r.get(c, "bert", "eval_nsp.json", eval_command("bert", "nsp"))
    c.figures.update(
        n=num(nsp, "n"),
        share=share.a_value,
        threshold=ORDER_SHARE,
        p_true=p.a_value,
        p_random=p.b_value,
        p_swapped=num(nsp, "rows", "swapped", "mean_p"),
    )
    return c

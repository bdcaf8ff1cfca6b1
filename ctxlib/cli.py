"""Command line: python -m ctxlib corpus|train|sense-tune|embed|info|eval|fill-mask|generate|serve (fill-mask and
generate: ctxlib.cli_text).

User errors (missing word, unknown model, bad file) exit with code 2 and one
clear line on stderr; nothing is written.
"""

from __future__ import annotations

import argparse
import io
import json
import logging
import sys
from pathlib import Path

from . import kinds
from .cli_common import UserError
from .cli_common import fail as _fail
from .cli_common import read_lines as _read_lines
from .cli_common import shown as _shown
from .cli_train import add_parsers as add_train_parsers


def cmd_corpus(args) -> int:
    from . import corpus

    if args.word is not None:
        word = corpus.nfkc(args.word.strip())
        if not word:
            return _fail("--word is empty; give a word, e.g. --word 苹果")
        rows = corpus.word_table(word)
        if args.json:
            print(json.dumps({"word": word, "rows": rows}, ensure_ascii=False, indent=1))
            return 0
        print(
            f"'{_shown(word)}' as a whole word, per source and split (supplement: per sense; it is written for ctxlab)"
        )
        print(f"{'source':>12}{'sense':>14}{'train':>9}{'valid':>9}{'test':>9}")
        for r in rows:
            print(f"{r['source']:>12}{r['sense'] or '':>14}{r['train']:>9,}{r['valid']:>9,}{r['test']:>9,}")
        if not any(r["train"] + r["valid"] + r["test"] for r in rows):
            print("no occurrences: the models learn this word only from its characters (ELMo, BERT)")
        return 0
    rows = corpus.corpus_table()
    if args.json:
        print(json.dumps(rows, ensure_ascii=False, indent=1))
        return 0
    cols = ["source", "split", "paragraphs", "sentences", "words", "characters", "distinct_words"]
    print("".join(f"{c:>15}" for c in cols))
    for r in rows:
        print("".join(f"{r[c]:>15}" if isinstance(r[c], str) else f"{r[c]:>15,}" for c in cols))
    return 0


def cmd_embed(args) -> int:
    import numpy as np

    from . import checkpoint
    from .encoder import OutOfVocabulary, load
    from .tokens import find_all

    try:
        lines = _read_lines(args.input)
    except UserError as e:
        return _fail(str(e))
    if not lines:
        return _fail("the input has no non-empty lines; give one sentence per line")
    if not args.word.strip():
        return _fail("--word is empty; give the word to embed, e.g. --word 苹果")
    for no, ln in lines:
        if not find_all(ln, args.word):
            return _fail(f"line {no} does not contain '{_shown(args.word)}': {ln[:40]!r}")
    try:
        enc = load(args.model)
    except checkpoint.CheckpointError as e:
        avail = ", ".join(checkpoint.available()) or "none"
        return _fail(f"cannot load model '{args.model}': {e} (available: {avail})")
    if not enc.in_vocab(args.word):
        return _fail(str(OutOfVocabulary(_shown(args.word), enc.name)))
    texts = [ln for _, ln in lines]
    vecs = enc.word_vectors(texts, args.word)
    buf = io.BytesIO()
    np.savez(
        buf,
        vectors=vecs.astype(np.float32),
        layer_names=np.array(enc.layer_names, dtype=str),
        sentences=np.array(texts, dtype=str),
        word=np.array(args.word, dtype=str),
    )
    checkpoint.atomic_write_bytes(Path(args.out), buf.getvalue())
    print(f"wrote {args.out}: vectors {tuple(vecs.shape)} ({len(enc.layer_names)} layers)", file=sys.stderr)
    return 0


def _model_info(spec: str) -> dict:
    """One model's info() (loaded; a Transformers model too), or {"error": one line}."""
    from . import checkpoint
    from .encoder import load

    try:
        enc = load(spec)
    except checkpoint.CheckpointError as e:
        return {"source": spec, "error": " ".join(str(e).splitlines())}
    info = {k: v for k, v in enc.info().items() if k not in ("config", "summary")}
    return {"source": spec, "family": kinds.family_of(enc), **info}


def _print_model_info(name: str, r: dict) -> None:
    if "error" in r:
        print(f"  {name:<10} ERROR {r['error']}")
        return
    extra = "".join(f" {k}={r[k]}" for k in ("language", "n_params", "license") if r.get(k) is not None)
    print(
        f"  {name:<10} {r['kind']:<9} family={r['family']} layers={len(r['layers'])} dim={r['dim']}{extra} "
        f"source={r['source']}"
    )


def cmd_info(args) -> int:
    from . import checkpoint, registered

    if args.model is not None:  # one model, e.g. info hf:/data/bert-base-chinese
        r = _model_info(args.model)
        if "error" in r:
            return _fail(r["error"])
        if args.json:
            print(json.dumps(r, ensure_ascii=False, indent=1))
        else:
            _print_model_info(args.model, r)
        return 0
    extras = {e.name: _model_info(e.source) for e in registered.extra_models()}
    rows = []
    for name in checkpoint.available():
        try:
            cfg = checkpoint.read_config(name)
            rows.append({"name": name, "kind": cfg["kind"], "config": cfg["config"], "summary": cfg.get("summary", {})})
        except checkpoint.CheckpointError as e:
            rows.append({"name": name, "error": str(e)})
    missing = [k for k in kinds.names(shipped=True) if k not in {r["name"] for r in rows}]
    if args.json:
        out = {
            "checkpoint_dir": str(checkpoint.CHECKPOINT_DIR),
            "models": rows,
            "missing": {k: checkpoint.rebuild_command(k) for k in missing},
        }
        if extras or registered.problems():
            out.update(registered=extras, problems=registered.problems())
        print(json.dumps(out, ensure_ascii=False, indent=1))
        return 0
    print(f"checkpoints in {checkpoint.CHECKPOINT_DIR}")
    for r in rows:
        if "error" in r:
            print(f"  {r['name']:<10} ERROR {r['error']}")
            continue
        s = r["summary"]
        print(
            f"  {r['name']:<10} {r['kind']:<9} steps={s.get('steps', '?')} tokens_seen={s.get('tokens_seen', '?')} "
            f"device={s.get('device', '?')} wall_s={s.get('wall_s', '?')}"
        )
    for k in missing:
        print(f"  {k:<10} missing: build with `{checkpoint.rebuild_command(k)}`")
    if extras or registered.problems():
        print(f"registered models ({registered.ENV}, {registered.DEFAULT_FILE.name})")
        for name, r in extras.items():
            _print_model_info(name, r)
        for line in registered.problems():
            print(f"  ERROR {line}")
    return 0


def cmd_eval(args) -> int:
    from . import checkpoint, evaluation

    try:
        result = evaluation.run_eval(args.model, args.task, device=args.device, seed=args.seed, out=args.out)
    except (evaluation.TaskChoiceError, checkpoint.CheckpointError) as e:  # e.g. a corrupt model.pt
        return _fail(str(e))
    if args.task == "senses":  # the per-word detail is in the file
        result = {
            **result,
            "sets": {k: {x: y for x, y in v.items() if x != "per_word"} for k, v in result["sets"].items()},
        }
    print(json.dumps(result, ensure_ascii=False, indent=1))
    return 0


def cmd_download(args) -> int:
    """Fetch a Transformers model once into a folder (the only command that uses the network)."""
    from . import checkpoint
    from .models import hf_load

    out = Path(args.out)
    if (out / "config.json").exists():
        return _fail(f"{out} already holds a model; give a new folder (nothing is overwritten)")
    try:
        hf_load.download(args.name, out)
        enc = _model_info("hf:" + str(out))
    except checkpoint.CheckpointError as e:
        return _fail(str(e))
    if "error" in enc:
        return _fail(enc["error"])
    print(
        f"saved {args.name} in {out} ({enc['family']}, {enc['n_params']:,} parameters, language {enc['language']}); "
        f"use it with: CTXLAB_MODELS=hf:{out} streamlit run app.py",
        file=sys.stderr,
    )
    return 0


def cmd_serve(args) -> int:
    from . import serve

    return serve.main(args)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m ctxlib", description="Train and inspect small word2vec, ELMo, BERT and GPT models."
    )
    p.add_argument("-v", "--verbose", action="store_true")
    sub = p.add_subparsers(dest="cmd", required=True)

    s = sub.add_parser("corpus", help="corpus statistics per source and split, or one word's occurrences")
    s.add_argument("--json", action="store_true")
    s.add_argument(
        "--word", default=None, help="count this word's occurrences per source, split (and supplement sense)"
    )
    s.set_defaults(fn=cmd_corpus)

    add_train_parsers(sub)

    s = sub.add_parser("embed", help="vectors of a word in each input sentence, as .npz")
    s.add_argument("--model", required=True)
    s.add_argument("--word", required=True)
    s.add_argument("--input", required=True, help="a UTF-8/GB18030 file with one sentence per line, or - for stdin")
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_embed)

    s = sub.add_parser(
        "info",
        help="the available checkpoints and how they were trained, and the registered models "
        "(CTXLAB_MODELS, models.toml); or one model: info hf:PATH",
    )
    s.add_argument(
        "model", nargs="?", default=None, help="one model to describe (a checkpoint name or folder, hf:PATH)"
    )
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_info)

    s = sub.add_parser("eval", help="train task heads on frozen features and write eval_<task>.json")
    s.add_argument("model")
    s.add_argument(
        "--task",
        required=True,
        choices=["pos", "ner", "sentiment", "senses", "cloze", "nsp"],
        help="pos/ner/sentiment: task heads; senses: sense accuracy and pair ranking per layer on three "
        "held-out sets; cloze: fill-mask top-1/top-5 on the frozen cloze set (BERT); nsp: BERT's P(IsNext) "
        "on held-out sentence pairs in true order, swapped, and with a random second sentence",
    )
    s.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--out", default=None, help="output JSON (default: in the checkpoint folder)")
    s.set_defaults(fn=cmd_eval)

    from .cli_text import add_parsers as add_text_parsers

    add_text_parsers(sub)

    s = sub.add_parser(
        "download",
        help="fetch a Transformers model from the Hugging Face hub once into a folder "
        "(needs internet; nothing else ever downloads), then use it as hf:FOLDER",
    )
    s.add_argument("name", help="a hub id, e.g. bert-base-chinese, uer/gpt2-chinese-cluecorpussmall, gpt2")
    s.add_argument("out", help="a new folder for its config, safetensors weights and tokenizer files")
    s.set_defaults(fn=cmd_download)

    s = sub.add_parser("serve", help="serve a class: haproxy in front of N Streamlit processes, cookie-sticky")
    from .serve import add_arguments as add_serve_arguments

    add_serve_arguments(s)
    s.set_defaults(fn=cmd_serve)
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose or args.cmd in ("train", "eval", "sense-tune") else logging.WARNING,
        format="%(asctime)s %(name)s %(message)s",
        stream=sys.stderr,
    )
    from .checkpoint import CheckpointError
    from .corpus import CorpusError

    try:
        return args.fn(args)
    except (UserError, CheckpointError, CorpusError) as e:  # a bad file or checkpoint a command did not catch itself
        return _fail(str(e))
    except BrokenPipeError:
        return 0

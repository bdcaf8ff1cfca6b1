"""Command line: python -m ctxlib corpus|train|sense-tune|embed|info|eval|fill-mask|generate|serve (fill-mask and
generate: ctxlib.cli_text).

User errors (missing word, unknown model, bad file) exit with code 2 and one
clear line on stderr; nothing is written.
"""
from __future__ import annotations

import argparse
import importlib
import io
import json
import logging
import sys
from pathlib import Path

from .checkpoint import KINDS as MODEL_KINDS
from .checkpoint import SHIPPED


class UserError(Exception):
    pass


def _fail(msg: str) -> int:
    print("error: " + " ".join(str(msg).splitlines()), file=sys.stderr)  # one line, whatever the message holds
    return 2


def _shown(text: str, n: int = 40) -> str:
    """User text quoted in a message: at most `n` characters, control characters escaped (no terminal codes)."""
    t = text if len(text) <= n else text[:n] + "…"
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in t)


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
        print(f"'{_shown(word)}' as a whole word, per source and split (supplement: per sense; it is written for ctxlab)")
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


def cmd_train(args) -> int:
    mod = importlib.import_module(f"ctxlib.training.{args.kind}")
    presets = getattr(mod, "PRESETS", {})
    if presets and args.preset not in presets:
        return _fail(f"unknown preset '{args.preset}' for {args.kind}; choose from {', '.join(presets)}")
    if args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            return _fail("--device cuda asked for, but no CUDA device is available; use --device auto or cpu")
    kw = {"corpus_path": args.corpus}
    if args.kind in ("elmo", "bert", "gpt"):
        kw.update(resume=args.resume, stretch=args.stretch, amp=args.amp, steps=args.steps, timeline=not args.no_timeline,
                  init_from=args.init_from)
    elif args.resume or args.stretch or args.amp or args.steps or args.init_from:
        return _fail(f"--resume, --init-from, --stretch, --amp and --steps are for elmo, bert and gpt; {args.kind} "
                     f"trains in one go")
    if args.init_from is not None:
        status = _check_init_from(args)
        if status:
            return status
    if args.kind == "gpt" and args.corpus is not None:
        return _fail("gpt trains on the built-in corpus only; --corpus is for word2vec, elmo and bert")
    if args.steps is not None and args.steps <= 0:
        return _fail("--steps must be a positive number of optimizer steps")
    if args.corpus is not None:
        from .corpus import CorpusError
        from .user_text import user_files

        if args.resume is not None:
            return _fail("--resume continues the run's own corpus; leave out --corpus")
        try:
            user_files(args.corpus)
        except CorpusError as e:
            return _fail(str(e))
        if args.out is None:
            return _fail("--corpus needs --out DIR, so the shipped checkpoints/ stay as they are")
    if args.resume is not None:
        from . import checkpoint
        from .training import resume

        try:
            run = resume.run_info(args.resume)
        except checkpoint.CheckpointError as e:
            return _fail(str(e))
        if run["kind"] != args.kind:
            return _fail(f"{args.resume} holds a {run['kind']} run; resume it with: {checkpoint.rebuild_command(run['kind'])} --resume {args.resume}")
    from .corpus import CorpusError

    try:
        out = mod.train(preset=args.preset, device=args.device, out=args.out, seed=args.seed, time_limit=args.time_limit, **kw)
    except CorpusError as e:  # e.g. a line deep in a big file that is not text: nothing was saved
        return _fail(str(e))
    from .training.trainer import dist_info

    if dist_info()[0] == 0:
        print(f"saved {out}")
    return 0


def cmd_sense_tune(args) -> int:
    """Sense-tune a pre-trained BERT run folder into --out (ctxlib.training.sense_tune)."""
    from . import checkpoint
    from .training.sense_tune import SENSE_TUNE_LR, SenseTuneConfig, sense_tune

    if args.steps <= 0:
        return _fail("--steps must be a positive number of optimizer steps")
    if args.lr is not None and not args.lr > 0:
        return _fail("--lr must be a positive learning rate")
    src = checkpoint.resolve(args.model)
    try:
        kind = checkpoint.read_config(src).get("kind")
    except (checkpoint.CheckpointError, OSError, ValueError, TypeError, AttributeError) as e:
        return _fail(str(e))
    if kind not in SENSE_TUNE_LR:
        return _fail(f"{args.model} holds a {kind} model; sense-tune is for BERT and ELMo checkpoints")
    if Path(args.out).resolve() == src.resolve():
        return _fail("--out must be another folder than the checkpoint it starts from, which stays as it is")
    if Path(args.out).exists() and not Path(args.out).is_dir():
        return _fail(f"--out {args.out} is a file; give a folder for the sense-tuned checkpoint")
    if (Path(args.out) / "config.json").exists():
        return _fail(f"{args.out} already holds a checkpoint; give a new folder (nothing is overwritten)")
    try:
        out = sense_tune(src, args.out, SenseTuneConfig(steps=args.steps, lr=args.lr or SENSE_TUNE_LR[kind]), seed=args.seed)
    except ValueError as e:  # already sense-tuned, too few words
        return _fail(str(e))
    print(f"saved {out}")
    return 0


def _check_init_from(args) -> int:
    """--init-from DIR: a run folder of the same kind, a new --out, and --steps beyond DIR's steps; 0 when fine."""
    from . import checkpoint
    from .training import resume

    if args.resume is not None:
        return _fail("--init-from starts a new run from another run's weights; --resume continues a run: give one")
    if args.out is None:
        return _fail("--init-from needs --out DIR for the new run, so the checkpoint it starts from stays as it is")
    try:
        run = resume.run_info(args.init_from)
        done = int(checkpoint.read_config(args.init_from).get("summary", {}).get("steps", 0))
    except (checkpoint.CheckpointError, OSError, ValueError, TypeError) as e:
        return _fail(str(e))
    if run["kind"] != args.kind:
        return _fail(f"{args.init_from} holds a model of kind {run['kind']}; train {args.kind} --init-from needs a "
                     f"{args.kind} run folder")
    if Path(args.out).resolve() == Path(args.init_from).resolve():
        return _fail("--out must be a new folder, not the one --init-from starts from (to continue it, use --resume)")
    if args.steps is None or args.steps <= done:
        return _fail(f"{args.init_from} is at step {done:,}: plan the continued run with --steps beyond it, "
                     f"e.g. --steps {done + 2000}")
    return 0


def _read_lines(src: str) -> list[tuple[int, str]]:
    from .corpus import CorpusError
    from .user_text import decode_bytes

    data = sys.stdin.buffer.read() if src == "-" else None
    if data is None:
        p = Path(src)
        if not p.is_file():
            raise UserError(f"input file {src} not found")
        data = p.read_bytes()
    try:
        text = decode_bytes(data, name="stdin" if src == "-" else src)
    except CorpusError as e:
        raise UserError(str(e)) from e
    return [(i + 1, ln.strip()) for i, ln in enumerate(text.splitlines()) if ln.strip()]


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
    np.savez(buf, vectors=vecs.astype(np.float32), layer_names=np.array(enc.layer_names, dtype=str),
             sentences=np.array(texts, dtype=str), word=np.array(args.word, dtype=str))
    checkpoint.atomic_write_bytes(Path(args.out), buf.getvalue())
    print(f"wrote {args.out}: vectors {tuple(vecs.shape)} ({len(enc.layer_names)} layers)", file=sys.stderr)
    return 0


def cmd_info(args) -> int:
    from . import checkpoint

    rows = []
    for name in checkpoint.available():
        try:
            cfg = checkpoint.read_config(name)
            rows.append({"name": name, "kind": cfg["kind"], "config": cfg["config"], "summary": cfg.get("summary", {})})
        except checkpoint.CheckpointError as e:
            rows.append({"name": name, "error": str(e)})
    missing = [k for k in SHIPPED if k not in {r["name"] for r in rows}]
    if args.json:
        print(json.dumps({"checkpoint_dir": str(checkpoint.CHECKPOINT_DIR), "models": rows,
                          "missing": {k: checkpoint.rebuild_command(k) for k in missing}}, ensure_ascii=False, indent=1))
        return 0
    print(f"checkpoints in {checkpoint.CHECKPOINT_DIR}")
    for r in rows:
        if "error" in r:
            print(f"  {r['name']:<10} ERROR {r['error']}")
            continue
        s = r["summary"]
        print(f"  {r['name']:<10} {r['kind']:<9} steps={s.get('steps', '?')} tokens_seen={s.get('tokens_seen', '?')} "
              f"device={s.get('device', '?')} wall_s={s.get('wall_s', '?')}")
    for k in missing:
        print(f"  {k:<10} missing: build with `{checkpoint.rebuild_command(k)}`")
    return 0


def cmd_eval(args) -> int:
    from . import checkpoint, evaluation

    try:
        result = evaluation.run_eval(args.model, args.task, device=args.device, seed=args.seed, out=args.out)
    except (evaluation.TaskChoiceError, checkpoint.CheckpointError) as e:  # e.g. a corrupt model.pt
        return _fail(str(e))
    if args.task == "senses":  # the per-word detail is in the file
        result = {**result, "sets": {k: {x: y for x, y in v.items() if x != "per_word"} for k, v in result["sets"].items()}}
    print(json.dumps(result, ensure_ascii=False, indent=1))
    return 0


def cmd_serve(args) -> int:
    from . import serve

    return serve.main(args)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m ctxlib", description="Train and inspect small word2vec, ELMo, BERT and GPT models.")
    p.add_argument("-v", "--verbose", action="store_true")
    sub = p.add_subparsers(dest="cmd", required=True)

    s = sub.add_parser("corpus", help="corpus statistics per source and split, or one word's occurrences")
    s.add_argument("--json", action="store_true")
    s.add_argument("--word", default=None, help="count this word's occurrences per source, split (and supplement sense)")
    s.set_defaults(fn=cmd_corpus)

    s = sub.add_parser("train", help="train a model and save a checkpoint")
    s.add_argument("kind", choices=MODEL_KINDS)
    s.add_argument("--preset", default="default", help="named hyperparameter set (tiny for tests, default for the shipped model)")
    s.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    s.add_argument("--out", default=None, help="checkpoint folder (default checkpoints/<kind>)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--time-limit", type=float, default=0.0,
                   help="a time budget in seconds that the learning-rate decay follows (0: the preset's)")
    s.add_argument("--amp", default=None, choices=["auto", "bf16", "off"],
                   help="mixed precision: auto = bf16 where native (CUDA, AVX512-BF16/AMX CPUs); bf16 = always; off")
    s.add_argument("--steps", type=int, default=None,
                   help="optimizer steps the schedule plans for (default: the preset's); with --resume it re-plans the "
                        "rest of a run, e.g. to end within a time budget (the learning rate then follows the new plan)")
    s.add_argument("--no-timeline", action="store_true", help="record no training timeline (speed measurements)")
    s.add_argument("--stretch", type=float, default=0.0,
                   help="stop this process after so many seconds of training, resumable with --resume (0: no stop)")
    s.add_argument("--corpus", default=None, metavar="FILE_OR_DIR",
                   help="train on your own text: a UTF-8 or GB18030 file or folder, one sentence or paragraph a line "
                        "(streamed from disk, so it may be larger than memory); needs --out")
    s.add_argument("--resume", default=None, metavar="DIR",
                   help="continue the run saved in DIR (its preset and seed; resume.pt, else the weights alone)")
    s.add_argument("--init-from", default=None, metavar="DIR",
                   help="continued pre-training: a new run in --out that starts from DIR's weights, vocabulary and step "
                        "count (fresh optimizer), on --corpus or the built-in corpus, up to --steps")
    s.set_defaults(fn=cmd_train)

    s = sub.add_parser("sense-tune", help="fine-tune a pre-trained BERT or ELMo so that same-sense occurrences lie closer "
                                          "(the supplement's labelled train sentences, with MLM + NSP beside)")
    s.add_argument("model", help="a pre-trained BERT or ELMo checkpoint folder (or name); it is not changed")
    s.add_argument("--out", required=True, help="the folder of the sense-tuned checkpoint")
    s.add_argument("--steps", type=int, default=1500)
    s.add_argument("--lr", type=float, default=None, help="peak learning rate (default: BERT 2e-4, ELMo 5e-4)")
    s.add_argument("--seed", type=int, default=0)
    s.set_defaults(fn=cmd_sense_tune)

    s = sub.add_parser("embed", help="vectors of a word in each input sentence, as .npz")
    s.add_argument("--model", required=True)
    s.add_argument("--word", required=True)
    s.add_argument("--input", required=True, help="a UTF-8/GB18030 file with one sentence per line, or - for stdin")
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_embed)

    s = sub.add_parser("info", help="the available checkpoints and how they were trained")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_info)

    s = sub.add_parser("eval", help="train task heads on frozen features and write eval_<task>.json")
    s.add_argument("model")
    s.add_argument("--task", required=True, choices=["pos", "ner", "sentiment", "senses", "cloze", "nsp"],
                   help="pos/ner/sentiment: task heads; senses: sense accuracy and pair ranking per layer on three "
                        "held-out sets; cloze: fill-mask top-1/top-5 on the frozen cloze set (BERT); nsp: BERT's P(IsNext) "
                        "on held-out sentence pairs in true order, swapped, and with a random second sentence")
    s.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--out", default=None, help="output JSON (default: in the checkpoint folder)")
    s.set_defaults(fn=cmd_eval)

    from .cli_text import add_parsers as add_text_parsers

    add_text_parsers(sub)

    s = sub.add_parser("serve", help="serve a class: haproxy in front of N Streamlit processes, cookie-sticky")
    from .serve import add_arguments as add_serve_arguments

    add_serve_arguments(s)
    s.set_defaults(fn=cmd_serve)
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose or args.cmd in ("train", "eval", "sense-tune") else logging.WARNING,
                        format="%(asctime)s %(name)s %(message)s", stream=sys.stderr)
    from .checkpoint import CheckpointError
    from .corpus import CorpusError

    try:
        return args.fn(args)
    except (UserError, CheckpointError, CorpusError) as e:  # a bad file or checkpoint a command did not catch itself
        return _fail(str(e))
    except BrokenPipeError:
        return 0

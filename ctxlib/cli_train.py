"""`python -m ctxlib train` and `sense-tune`: the commands that write checkpoints (see cli.py for the rest)."""

from __future__ import annotations

from pathlib import Path

from . import kinds
from .cli_common import fail as _fail


def cmd_train(args) -> int:
    mod = kinds.training_module(args.kind)
    presets = getattr(mod, "PRESETS", {})
    if presets and args.preset not in presets:
        return _fail(f"unknown preset '{args.preset}' for {args.kind}; choose from {', '.join(presets)}")
    if args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            return _fail("--device cuda asked for, but no CUDA device is available; use --device auto or cpu")
    kw = {"corpus_path": args.corpus}
    if args.kind in ("elmo", "bert", "gpt"):
        kw.update(
            resume=args.resume,
            stretch=args.stretch,
            amp=args.amp,
            steps=args.steps,
            timeline=not args.no_timeline,
            init_from=args.init_from,
        )
    elif args.resume or args.stretch or args.amp or args.steps or args.init_from:
        return _fail(
            f"--resume, --init-from, --stretch, --amp and --steps are for elmo, bert and gpt; {args.kind} "
            f"trains in one go"
        )
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
            return _fail(
                f"{args.resume} holds a {run['kind']} run; resume it with: {checkpoint.rebuild_command(run['kind'])} --resume {args.resume}"
            )
    from .corpus import CorpusError

    try:
        out = mod.train(
            preset=args.preset, device=args.device, out=args.out, seed=args.seed, time_limit=args.time_limit, **kw
        )
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
        out = sense_tune(
            src, args.out, SenseTuneConfig(steps=args.steps, lr=args.lr or SENSE_TUNE_LR[kind]), seed=args.seed
        )
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
        return _fail(
            f"{args.init_from} holds a model of kind {run['kind']}; train {args.kind} --init-from needs a "
            f"{args.kind} run folder"
        )
    if Path(args.out).resolve() == Path(args.init_from).resolve():
        return _fail("--out must be a new folder, not the one --init-from starts from (to continue it, use --resume)")
    if args.steps is None or args.steps <= done:
        return _fail(
            f"{args.init_from} is at step {done:,}: plan the continued run with --steps beyond it, "
            f"e.g. --steps {done + 2000}"
        )
    return 0


def add_parsers(sub) -> None:
    """The train and sense-tune subcommands."""
    s = sub.add_parser("train", help="train a model and save a checkpoint")
    s.add_argument("kind", choices=kinds.names(trainable=True))
    s.add_argument(
        "--preset", default="default", help="named hyperparameter set (tiny for tests, default for the shipped model)"
    )
    s.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    s.add_argument("--out", default=None, help="checkpoint folder (default checkpoints/<kind>)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument(
        "--time-limit",
        type=float,
        default=0.0,
        help="a time budget in seconds that the learning-rate decay follows (0: the preset's)",
    )
    s.add_argument(
        "--amp",
        default=None,
        choices=["auto", "bf16", "off"],
        help="mixed precision: auto = bf16 where native (CUDA, AVX512-BF16/AMX CPUs); bf16 = always; off",
    )
    s.add_argument(
        "--steps",
        type=int,
        default=None,
        help="optimizer steps the schedule plans for (default: the preset's); with --resume it re-plans the "
        "rest of a run, e.g. to end within a time budget (the learning rate then follows the new plan)",
    )
    s.add_argument("--no-timeline", action="store_true", help="record no training timeline (speed measurements)")
    s.add_argument(
        "--stretch",
        type=float,
        default=0.0,
        help="stop this process after so many seconds of training, resumable with --resume (0: no stop)",
    )
    s.add_argument(
        "--corpus",
        default=None,
        metavar="FILE_OR_DIR",
        help="train on your own text: a UTF-8 or GB18030 file or folder, one sentence or paragraph a line "
        "(streamed from disk, so it may be larger than memory); needs --out",
    )
    s.add_argument(
        "--resume",
        default=None,
        metavar="DIR",
        help="continue the run saved in DIR (its preset and seed; resume.pt, else the weights alone)",
    )
    s.add_argument(
        "--init-from",
        default=None,
        metavar="DIR",
        help="continued pre-training: a new run in --out that starts from DIR's weights, vocabulary and step "
        "count (fresh optimizer), on --corpus or the built-in corpus, up to --steps",
    )
    s.set_defaults(fn=cmd_train)

    s = sub.add_parser(
        "sense-tune",
        help="fine-tune a pre-trained BERT or ELMo so that same-sense occurrences lie closer "
        "(the supplement's labelled train sentences, with MLM + NSP beside)",
    )
    s.add_argument("model", help="a pre-trained BERT or ELMo checkpoint folder (or name); it is not changed")
    s.add_argument("--out", required=True, help="the folder of the sense-tuned checkpoint")
    s.add_argument("--steps", type=int, default=1500)
    s.add_argument("--lr", type=float, default=None, help="peak learning rate (default: BERT 2e-4, ELMo 5e-4)")
    s.add_argument("--seed", type=int, default=0)
    s.set_defaults(fn=cmd_sense_tune)

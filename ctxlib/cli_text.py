"""The commands that print text a model writes or ranks: `fill-mask` (BERT) and `generate` (GPT), each with a note on
what the model was trained on (ctxlib.model_card) on stderr. Errors exit 2 with one line, as every command does."""

from __future__ import annotations

import json
import sys

from . import kinds
from .cli_common import fail as _fail
from .writing import NO_REPEAT_NGRAM, REPETITION_PENALTY, check_generation


def _load_model(name: str, view: str, needs: str):
    """(the encoder `name`, None) when it loads and takes `view` (kinds.FAMILY_VIEWS); else (None, the exit status)
    after the message, which says a broken or missing checkpoint, or `needs` (the model kind the command takes)."""
    from . import checkpoint
    from .encoder import load

    try:
        enc = load(name)
    except checkpoint.CheckpointError as e:
        return None, _fail(str(e))
    if view not in kinds.views_of(enc):
        what = enc.kind if enc.kind != "hf" else f"{kinds.family_of(enc)} Transformers"
        return None, _fail(f"model '{name}' is a {what} model; {needs}")
    return enc, None


def _note(enc) -> None:
    from .model_card import describe

    print(describe(enc), file=sys.stderr)


def cmd_fill_mask(args) -> int:
    if args.topk < 1:
        return _fail(f"--topk must be at least 1, got {args.topk}")
    enc, status = _load_model(args.model, "fill_mask", "fill-mask needs a BERT model")
    if enc is None:
        return status
    if "[MASK]" not in args.text:
        return _fail("the text has no [MASK]; write e.g. 今天天气很[MASK]")
    try:
        out = enc.fill_mask(args.text, topk=args.topk)
    except ValueError as e:  # longer than the model's positions
        return _fail(f"{e}; shorten the text around the [MASK]")
    _note(enc)
    print(json.dumps(out, ensure_ascii=False, indent=1))
    from .tokens import mask_at_end  # not viz.pretraining: that one imports plotly

    if mask_at_end(args.text):
        print(
            "note: nothing follows the last [MASK]; the model learned from sentences that end in punctuation, so "
            "there it mostly guesses 。 or ，. End the text with 。 to ask for a character.",
            file=sys.stderr,
        )
    return 0


def cmd_generate(args) -> int:
    if not args.prompt.strip():
        return _fail("the prompt is empty; write the beginning of a sentence, e.g. 今天天气")
    try:
        check_generation(args.temperature, args.top_k, args.max_new, args.repetition_penalty, args.no_repeat_ngram)
    except ValueError as e:  # the library's names, written as the flags
        return _fail("--" + str(e).replace("_", "-"))
    enc, status = _load_model(args.model, "generate", "generate needs a GPT model (python -m ctxlib train gpt)")
    if enc is None:
        return status
    names = None
    if args.no_names:
        from .lexicon import kept_out

        names = kept_out()
    try:
        out = enc.generate(
            args.prompt,
            max_new=args.max_new,
            temperature=args.temperature,
            top_k=args.top_k,
            seed=args.seed,
            repetition_penalty=args.repetition_penalty,
            no_repeat_ngram=args.no_repeat_ngram,
            banned_names=names,
        )
    except ValueError as e:
        return _fail(str(e))
    _note(enc)
    print(json.dumps(out, ensure_ascii=False, indent=1) if args.json else out["text"])
    return 0


def add_parsers(sub) -> None:
    """The fill-mask and generate subcommands, added to `sub` (build_parser's subparsers)."""
    s = sub.add_parser("fill-mask", help="top-k candidates for each [MASK] (BERT)")
    s.add_argument("text")
    s.add_argument("--model", default="bert")
    s.add_argument("--topk", type=int, default=5)
    s.set_defaults(fn=cmd_fill_mask)

    s = sub.add_parser("generate", help="continue a prompt character by character (GPT)")
    s.add_argument("prompt")
    s.add_argument("--model", default="gpt")
    s.add_argument("--max-new", type=int, default=50, help="characters to generate")
    s.add_argument("--temperature", type=float, default=0.8, help="> 0; lower is more predictable")
    s.add_argument("--top-k", type=int, default=20, help="sample from the k most likely characters")
    s.add_argument(
        "--repetition-penalty",
        type=float,
        default=REPETITION_PENALTY,
        help=f"CTRL-style: characters already in the prompt or output are made less likely (default "
        f"{REPETITION_PENALTY}; 1.0 = off)",
    )
    s.add_argument(
        "--no-repeat-ngram",
        type=int,
        default=NO_REPEAT_NGRAM,
        help=f"never write the same N characters twice (default {NO_REPEAT_NGRAM}; 0 = off)",
    )
    s.add_argument(
        "--no-names",
        action="store_true",
        help="never complete a person's name from People's Daily's name tags (nr), nor a byline word before one (记者, 新华社)",
    )
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--json", action="store_true", help="the text and every step's choice and top-5 candidates")
    s.set_defaults(fn=cmd_generate)

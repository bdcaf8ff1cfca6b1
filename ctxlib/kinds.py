"""The one registry of model kinds: every list of models in the library, the CLI and the app reads it.

A kind is a family of checkpoints one Encoder class loads. For each kind the registry holds its Encoder class, its
training module (PRESETS and `train()`), its family (which decides the views that take it), whether
`checkpoints/` ships one, whether the training page can train it live and on an uploaded corpus, and its display
order. Adding a kind means one `Kind(...)` entry below plus its files (README: "add a model").

    from ctxlib import kinds
    kinds.names()                       # every kind, in display order
    kinds.names(shipped=True)           # the kinds checkpoints/ holds
    kinds.names(view="attention")       # the kinds a view takes
    kinds.encoder_class("bert")         # BertEncoder (imported on first use)
    kinds.views_of(encoder)             # what one loaded model takes (an hf: model: from its family)

This module imports nothing heavy: the classes and training modules are named as strings and imported on use.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field

# which views take a model of each family; "vectors" = every view that reads token vectors (type vs token, atlas,
# home demo, results), "attention" = attention maps, "fill_mask" = masked-LM answers, "generate" = left-to-right
# writing and the left-only comparisons, "nsp" = next-sentence prediction (only with that head: `has_nsp`),
# "elmo" = the biLM's own views (both LMs' guesses, the 2L+1 layers and their mix).
FAMILY_VIEWS: dict[str, frozenset[str]] = {
    "static": frozenset({"vectors"}),
    "bilm": frozenset({"vectors", "elmo"}),
    "masked": frozenset({"vectors", "attention", "fill_mask", "nsp"}),
    "causal": frozenset({"vectors", "attention", "generate"}),
    "encoder": frozenset({"vectors", "attention"}),
}
VIEWS = frozenset().union(*FAMILY_VIEWS.values())


@dataclass(frozen=True)
class Kind:
    name: str
    encoder: str  # "module:Class", imported on use
    family: str  # a key of FAMILY_VIEWS; "any" for a kind whose family each model says (hf:)
    order: int  # display order in every list
    training: str | None = None  # the module with PRESETS and train(Preset, ...); None: not trainable here
    shipped: bool = False  # checkpoints/<name>/ ships one (`info` names it when missing)
    live: bool = False  # the training page trains it live
    uploadable: bool = False  # ... and on a user's uploaded corpus
    timeline: bool = False  # its runs record a training timeline (the replay)
    views: frozenset[str] = field(default=frozenset())  # set from the family unless given

    def __post_init__(self):
        if self.family != "any" and self.family not in FAMILY_VIEWS:
            raise ValueError(f"kind {self.name!r}: unknown family {self.family!r} (one of {sorted(FAMILY_VIEWS)})")
        if not self.views and self.family != "any":
            object.__setattr__(self, "views", FAMILY_VIEWS[self.family])


REGISTRY: dict[str, Kind] = {}


def register(kind: Kind) -> Kind:
    """Add (or replace) a kind; returns it."""
    REGISTRY[kind.name] = kind
    return kind


def unregister(name: str) -> None:
    REGISTRY.pop(name, None)


for _k in (
    Kind(
        "word2vec",
        "ctxlib.models.word2vec:Word2VecEncoder",
        "static",
        10,
        "ctxlib.training.word2vec",
        shipped=True,
        live=True,
        uploadable=True,
    ),
    Kind(
        "elmo",
        "ctxlib.models.elmo:ElmoEncoder",
        "bilm",
        20,
        "ctxlib.training.elmo",
        shipped=True,
        live=True,
        uploadable=True,
        timeline=True,
    ),
    Kind(
        "bert",
        "ctxlib.models.bert_encoder:BertEncoder",
        "masked",
        30,
        "ctxlib.training.bert",
        shipped=True,
        live=True,
        uploadable=True,
        timeline=True,
    ),
    Kind(
        "gpt",
        "ctxlib.models.gpt:GptEncoder",
        "causal",
        40,
        "ctxlib.training.gpt",
        shipped=True,
        live=True,
        timeline=True,
    ),
    Kind("hf", "ctxlib.models.hf:HfEncoder", "any", 100),  # any Transformers checkpoint: `hf:PATH` or `hf:NAME`
):
    register(_k)


def get(name: str) -> Kind:
    """The kind `name`; KeyError naming the known kinds."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown model kind {name!r} (known: {', '.join(names())})") from None


def names(
    *,
    shipped: bool | None = None,
    live: bool | None = None,
    uploadable: bool | None = None,
    trainable: bool | None = None,
    timeline: bool | None = None,
    view: str | None = None,
) -> tuple[str, ...]:
    """Kind names in display order, filtered by each flag given (None: either)."""

    def keep(k: Kind) -> bool:
        return all(
            want is None or have == want
            for want, have in (
                (shipped, k.shipped),
                (live, k.live),
                (uploadable, k.uploadable),
                (trainable, k.training is not None),
                (timeline, k.timeline),
            )
        ) and (view is None or view in k.views)

    return tuple(k.name for k in sorted(REGISTRY.values(), key=lambda k: (k.order, k.name)) if keep(k))


def encoder_class(name: str):
    """The Encoder class of kind `name` (imported now)."""
    mod, cls = get(name).encoder.split(":")
    return getattr(importlib.import_module(mod), cls)


def training_module(name: str):
    """The training module of kind `name` (PRESETS, train()); ValueError when the kind is not trainable here."""
    k = get(name)
    if k.training is None:
        raise ValueError(f"{name} models are not trained by ctxlab (trainable: {', '.join(names(trainable=True))})")
    return importlib.import_module(k.training)


def views_of(encoder) -> frozenset[str]:
    """The views that take this loaded model: its kind's, or for a kind of family "any" (hf:) its own family's;
    "nsp" only where the model has that head."""
    k = REGISTRY.get(getattr(encoder, "kind", ""))
    views = (
        k.views
        if k is not None and k.family != "any"
        else FAMILY_VIEWS.get(getattr(encoder, "family", ""), frozenset())
    )
    if getattr(encoder, "has_nsp", k is not None and "nsp" in k.views) is False:
        views = views - {"nsp"}
    return views


def family_of(encoder) -> str:
    """ "static", "bilm", "masked", "causal" or "encoder"."""
    k = REGISTRY.get(getattr(encoder, "kind", ""))
    return k.family if k is not None and k.family != "any" else getattr(encoder, "family", "encoder")

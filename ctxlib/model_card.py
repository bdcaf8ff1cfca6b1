"""What a model was trained on and how big it is, read from the loaded model and its checkpoint summary: the note that
goes above any text a model writes or ranks (generation, fill-mask), so a class reads "1998 news and reviews" into
the output rather than facts about the world.
"""

from __future__ import annotations

from .corpus import SOURCE_NAMES, SOURCES


def training_sources(summary: dict) -> list[str]:
    """The training text's sources, as corpus.SOURCES keys ("pd", "reviews", "supplement"), or ["user"] for a model
    trained on a user's corpus; [] when the checkpoint does not say."""
    if summary.get("outside"):  # a Transformers model: its authors' pretraining text (its model card says which)
        return ["outside"]
    run = summary.get("run") or {}
    if run.get("corpus"):
        return ["user"]
    head = str(run.get("sources") or "").split(" ")[0]
    return [s for s in head.split("+") if s in SOURCES]


def parameter_count(enc) -> int | None:
    """Parameters of the encoder's network (counted from its tensors), or the checkpoint summary's figure, or None."""
    model = getattr(enc, "model", None)
    if model is not None and hasattr(model, "parameters"):
        return int(sum(p.numel() for p in model.parameters()))
    n = (enc.summary or {}).get("parameters")
    return int(n) if n else None


def facts(enc) -> dict:
    """{"kind", "sources" (training_sources), "corpus" (a user corpus's path, else None), "parameters", "layers"
    (Transformer blocks / LSTM layers: the encoder's layers minus its input layer), "hidden" (width, or None),
    "tokens_seen" (or None)}."""
    summary = enc.summary or {}
    cfg = enc.config or {}
    return {
        "kind": enc.kind,
        "sources": training_sources(summary),
        "corpus": (summary.get("run") or {}).get("corpus"),
        "parameters": parameter_count(enc),
        "layers": max(len(enc.layer_names) - 1, 1),
        "hidden": cfg.get("hidden") or cfg.get("dim"),
        "tokens_seen": summary.get("tokens_seen"),
    }


def describe(enc) -> str:
    """The note in English, one line (the CLI's; the app words it in the interface language from `facts`)."""
    f = facts(enc)
    text = " + ".join(SOURCE_NAMES[s] for s in f["sources"]) or "unknown text (the checkpoint does not say)"
    size = f"{f['parameters']:,} parameters" if f["parameters"] else "size unknown"
    return (
        f"note: {f['kind']} model trained on {text} (train split); {size}, {f['layers']} layers. "
        f"It writes like its training text: not a source of facts."
    )

"""The home page's model tables: `model_rows` (name, status, family, parameters, layers of every model) and
`training_rows` (each loaded model's training record, source and license, for the teachers).
"""

from __future__ import annotations

from ctxlib import kinds
from ctxlib.records import TrainingRecord

from . import loaders
from .i18n import catalogue, lang, msg


def _fmt(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:,.4g}" if abs(v) < 1e4 else f"{v:,.0f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def _duration(seconds: float) -> str:
    return (
        f"{seconds:.0f} s"
        if seconds < 120
        else (f"{seconds / 60:.0f} min" if seconds < 7200 else f"{seconds / 3600:.1f} h")
    )


def n_params(enc) -> int | None:
    """The model's number of parameters (a Transformers model says it; a ctxlab model counts its network's, once: the
    count is kept on the encoder, as training changes the weights but not their number)."""
    n = getattr(enc, "_ctxlab_n_params", None)
    if isinstance(n, int):
        return n
    n = _count_params(enc)
    try:
        enc._ctxlab_n_params = n
    except AttributeError:
        pass
    return n


def _count_params(enc) -> int | None:
    n = getattr(enc, "n_params", None)
    if isinstance(n, int):
        return n
    net = getattr(enc, "model", None) or getattr(enc, "lm", None)
    if net is not None and hasattr(net, "parameters"):
        return int(sum(p.numel() for p in net.parameters()))
    vecs = getattr(getattr(enc, "keyed_vectors", None), "vectors", None)  # word2vec: its vector table
    return int(vecs.size) if vecs is not None else None


def measure_text(measures: dict[str, float]) -> str:
    """Named measures in the session's language ("验证集每字困惑度 51.59 · 最终训练损失 3.29"); a measure without a
    name keeps its key."""
    known = catalogue(lang())
    return " · ".join(f"{known.get('measures.' + k.replace('.', '_'), k)} {_fmt(v)}" for k, v in measures.items())


def model_rows(status: dict[str, str | None]) -> list[dict]:
    """One row per model in `status`, narrow enough for the home page: name, status, family, parameters, layers (the
    training record and the source are in `training_rows`, for the teachers)."""
    col = {k: msg(f"home.models.col.{k}") for k in ("model", "status")}
    col.update({k: msg(f"registry.col.{k}") for k in ("family", "params")})
    col["layers"] = msg("home.models.col.layers")
    rows = []
    for m, err in status.items():
        row = {c: "" for c in col.values()}  # blank, not "None"
        row[col["model"]] = m
        if err is not None:
            row[col["status"]] = err if loaders.is_registered(m) else msg("home.models.missing")
            rows.append(row)
            continue
        enc = loaders.load_encoder(m)
        row.update(
            {
                col["status"]: msg("home.models.loaded"),
                col["family"]: msg(f"registry.family.{kinds.family_of(enc)}"),
                col["params"]: _fmt(n_params(enc)),
                col["layers"]: _fmt(len(enc.layer_names)),
            }
        )
        rows.append(row)
    return rows


def training_rows(models: list[str]) -> list[dict]:
    """One row per loaded model: its training record (steps, tokens, device, time, named measures), source, license."""
    col = {k: msg(f"home.models.col.{k}") for k in ("model", "dim", "steps", "tokens", "device", "wall", "validation")}
    col.update({k: msg(f"registry.col.{k}") for k in ("source", "license")})
    rows = []
    for m in models:
        enc = loaders.load_encoder(m)
        rec = TrainingRecord.from_summary(enc.summary)
        outside = loaders.is_registered(m)
        rows.append(
            {
                col["model"]: m,
                col["dim"]: _fmt(enc.dim),
                col["steps"]: _fmt(rec.steps),
                col["tokens"]: _fmt(rec.tokens_seen),
                col["device"]: _fmt(rec.device),
                col["wall"]: _duration(rec.wall_s) if isinstance(rec.wall_s, (int, float)) else _fmt(rec.wall_s),
                col["validation"]: measure_text(rec.measures()),
                col["source"]: str(getattr(enc, "source", "")) if outside else msg("registry.trained_here"),
                col["license"]: str(getattr(enc, "license", None) or "") if outside else msg("registry.own_license"),
            }
        )
    return rows

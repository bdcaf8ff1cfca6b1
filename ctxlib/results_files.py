"""Reading the Results page's figures: one side of a measure (`Fig`: which file, which key), the reader that records
what a claim read or missed, and the outside models' folders (ctxlib.results builds the claims from these)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from . import kinds
from .verdict import MARGIN, Comparison, counts, verdict

ORDER_SHARE = 0.75  # nsp_topic: swapping keeps at least this share of the true-vs-random gap


@dataclass(frozen=True)
class Fig:
    """One side of a measure: `side` (the key the page translates), read by `read` from `model`/`file`, shown as
    `key`. A fixed number has no model; `read` then gets None."""

    side: str
    model: str
    file: str
    key: str
    read: Callable
    command: str = ""


def num(d: dict | None, *path):
    for k in path:
        if not isinstance(d, dict) or d.get(k) is None:
            return None
        d = d[k]
    return d if isinstance(d, (int, float)) and not isinstance(d, bool) else None


def read_at(*path):
    """A reader of the number at `path` in an eval file (None when absent)."""
    return partial(num_at, path)


def num_at(path, d):
    return num(d, *path)


def fixed(side: str, value: float) -> Fig:
    return Fig(side, "", "", "", lambda _d: value)


class Reader:
    """Reads checkpoints/<model>/<file> (or an outside model's folder) once; records what a claim read or missed."""

    def __init__(self, root: Path, extra: Mapping[str, Path] | None = None):
        self.root = Path(root)
        self.extra = {str(k): Path(v) for k, v in (extra or {}).items()}
        self._cache: dict[Path, dict | None] = {}

    def _load(self, path: Path) -> dict | None:
        if path not in self._cache:
            try:
                d = json.loads(path.read_text(encoding="utf-8"))
                self._cache[path] = d if isinstance(d, dict) else None
            except (OSError, ValueError):
                self._cache[path] = None
        return self._cache[path]

    def get(self, claim, model: str, name: str, command: str) -> dict | None:
        d = self._load(self.root / model / name)
        rel = f"{self.root.name}/{model}/{name}"
        if d is None:
            if (rel, command) not in claim.missing:
                claim.missing.append((rel, command))
        elif rel not in claim.files:
            claim.files.append(rel)
        return d

    def figure(self, claim, fig: Fig, outside: str | None = None):
        """(value, source): the figure (None when absent) and "file#/key" (a JSON pointer; "" for a fixed number)."""
        if not fig.model:
            return fig.read(None), ""
        if outside is not None:
            path = self.extra[outside] / fig.file
            d, src = self._load(path), str(path)
        else:
            d, src = self.get(claim, fig.model, fig.file, fig.command), f"{self.root.name}/{fig.model}/{fig.file}"
        try:  # a file of the wrong shape (a list where a table belongs) reads as a missing figure
            value = fig.read(d) if d is not None else None
        except (AttributeError, TypeError, ValueError, KeyError, IndexError):
            value = None
        return value, f"{src}#{fig.key}"


def compare(r: Reader, c, measure: str, where: str, a: Fig, b: Fig, margin=MARGIN, outside: bool = False) -> Comparison:
    """Append the measure "a above b" to the claim; with `outside`, also each outside model in a's place."""
    (av, asrc), (bv, bsrc) = r.figure(c, a), r.figure(c, b)
    cmp = make(measure, where, a.side, av, asrc, b.side, bv, bsrc, margin)
    c.comparisons.append(cmp)
    for name in r.extra if outside else ():
        ov, osrc = r.figure(c, a, outside=name)
        if ov is not None:
            c.outside.append((name, make(measure, where, name, ov, osrc, b.side, bv, bsrc, margin)))
    return cmp


def make(measure, where, a, av, asrc, b, bv, bsrc, margin) -> Comparison:
    """A Comparison; a best-layer figure (top, lowest tied, highest tied) becomes its top layer and its range."""
    ar = (av[1], av[2]) if isinstance(av, tuple) else None
    br = (bv[1], bv[2]) if isinstance(bv, tuple) else None
    av, bv = (v[0] if isinstance(v, tuple) else v for v in (av, bv))
    return Comparison(measure, where, a, av, b, bv, margin, asrc, bsrc, ar, br)


def parse_extra(text: str | None) -> tuple[dict[str, Path], list[str]]:
    """ "name=folder;name=folder" (EXTRA_ENV) -> ({name: folder}, [the entries that were not usable, as given])."""
    found, bad = {}, []
    for entry in (text or "").split(";"):
        name, sep, folder = (x.strip() for x in entry.partition("="))
        if not entry.strip():
            continue
        if (
            not sep
            or not name
            or not folder
            or name in kinds.names(shipped=True)
            or name in found
            or not Path(folder).is_dir()
        ):
            bad.append(entry.strip())
        else:
            found[name] = Path(folder)
    return found, bad


def outside_files(extra_dirs: Mapping[str, Path]) -> dict[str, list[str]]:
    """The eval files each outside model's folder holds (an empty list: nothing this page can read)."""
    return {
        k: sorted(p.name for p in Path(v).glob("eval_*.json")) if Path(v).is_dir() else []
        for k, v in extra_dirs.items()
    }


@dataclass
class ClaimResult:
    key: str
    comparisons: list[Comparison] = field(default_factory=list)  # every measure of the claim, measured or not
    figures: dict = field(default_factory=dict)  # named figures for the page's figure and why lines
    files: list[str] = field(default_factory=list)  # the files read, relative to the checkpoint folder's parent
    missing: list[tuple[str, str]] = field(default_factory=list)  # (file, the command that writes it)
    notes: list[tuple[str, dict]] = field(default_factory=list)  # (message key, its values): what the figures rest on
    outside: list[tuple[str, Comparison]] = field(default_factory=list)  # (outside model, its comparison): no verdict

    @property
    def verdict(self) -> str:
        return verdict(self.comparisons)

    @property
    def held(self) -> int:
        return sum(c.holds for c in self.comparisons)

    @property
    def counts(self) -> dict[str, int]:
        return counts(self.comparisons)

    @property
    def measured(self) -> list[Comparison]:
        return [c for c in self.comparisons if c.measured]

    @property
    def missing_figures(self) -> list[str]:
        """file#/key of every figure a measure needed and could not read, in order, once each."""
        return list(dict.fromkeys(s for c in self.comparisons for s in c.missing_sources()))


def eval_command(model: str, task: str) -> str:
    return f"python -m ctxlib eval {model} --task {task}"


def task_fig(side: str, model: str, task: str, key: str) -> Fig:
    return Fig(side, model, f"eval_{task}.json", f"/{key}", read_at(key), eval_command(model, task))

"""Models a teacher registers for the app, beside the shipped ones: `CTXLAB_MODELS` and `models.toml`.

- The environment variable `CTXLAB_MODELS`: comma-separated sources, e.g.
  `CTXLAB_MODELS="hf:/data/bert-base-chinese,hf:/data/gpt2-chinese"`.
- The file `models.toml` beside app.py (another file with `CTXLAB_MODELS_FILE=PATH`):

      [[model]]
      source = "hf:/data/bert-base-chinese"
      name = "bert-base-chinese"   # optional: the name the pickers show

A source is anything `ctxlib.load` takes: `hf:PATH` (a folder saved by Transformers' save_pretrained), `hf:NAME`
(a hub id already in the local cache) or a ctxlab checkpoint folder. Nothing is loaded here: `extra_models()` only
reads the list, so a model that fails to load is reported by the page that loads it, and the others still work.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from . import kinds
from .checkpoint import REPO_ROOT

ENV = "CTXLAB_MODELS"
FILE_ENV = "CTXLAB_MODELS_FILE"
DEFAULT_FILE = REPO_ROOT / "models.toml"
MAX_MODELS = 16
_BAD_NAME = re.compile(r"[\s,:;|/\\<>\"'`]+")  # names go into ?models=a,b and ?layers=a:2


@dataclass(frozen=True)
class Extra:
    name: str  # shown in the pickers; no commas, colons or slashes
    source: str  # what ctxlib.load takes


def _file() -> Path:
    return Path(os.environ.get(FILE_ENV) or DEFAULT_FILE)


_CACHE: dict = {}


def _key() -> tuple:
    f = _file()
    try:
        mtime = f.stat().st_mtime_ns
    except OSError:
        mtime = None
    return os.environ.get(ENV, ""), str(f), mtime


def _entries() -> tuple[list[tuple[str | None, str]], list[str]]:
    """([(name or None, source)], problems): the environment's entries, then the file's (read again when the
    variable or the file changes)."""
    key = _key()
    if key not in _CACHE:
        _CACHE.clear()
        _CACHE[key] = _read_entries(Path(key[1]))
    return _CACHE[key]


def _read_entries(f: Path) -> tuple[list[tuple[str | None, str]], list[str]]:
    out: list[tuple[str | None, str]] = [(None, s.strip()) for s in os.environ.get(ENV, "").split(",") if s.strip()]
    problems: list[str] = []
    if f.is_file():
        try:
            data = tomllib.loads(f.read_text(encoding="utf-8"))
            rows = data.get("model", [])
            if not isinstance(rows, list):
                raise ValueError("[[model]] tables expected")
            for i, r in enumerate(rows, 1):
                if not isinstance(r, dict) or not isinstance(r.get("source"), str) or not r["source"].strip():
                    problems.append(f'{f}: model {i} has no source = "hf:PATH"; it is left out')
                    continue
                name = r.get("name")
                out.append((name.strip() if isinstance(name, str) and name.strip() else None, r["source"].strip()))
        except (OSError, UnicodeDecodeError, ValueError, tomllib.TOMLDecodeError) as e:
            problems.append(
                f"{f} could not be read ({type(e).__name__}: {str(e).splitlines()[0][:120]}); "
                f'write [[model]] tables with source = "hf:PATH"'
            )
    return out, problems


def default_name(source: str) -> str:
    """bert-base-chinese for hf:/data/bert-base-chinese/ or hf:google-bert/bert-base-chinese."""
    s = source[3:] if source.startswith("hf:") else source
    base = s.rstrip("/\\").replace("\\", "/").rsplit("/", 1)[-1] or s
    return _clean(base)


def _clean(name: str) -> str:
    return _BAD_NAME.sub("-", name).strip("-")[:60] or "model"


_EXTRA: dict = {}


def extra_models() -> list[Extra]:
    """The registered models, in order (the environment's first), each source once, names unique and distinct from
    the shipped kinds' names (worked out again when the variable or the file changes)."""
    key = (_key(), tuple(kinds.names()))  # a kind added at run time (tests/test_kinds.py) takes its name
    if key not in _EXTRA:
        _EXTRA.clear()
        _EXTRA[key] = _extra_models()
    return list(_EXTRA[key])


def _extra_models() -> list[Extra]:
    taken = set(kinds.names()) | {"live"}
    seen, out = set(), []
    for name, source in _entries()[0]:
        if source in seen or len(out) >= MAX_MODELS:
            continue
        seen.add(source)
        base = _clean(name) if name else default_name(source)
        n, i = base, 2
        while n in taken:
            n, i = f"{base}-{i}", i + 1
        taken.add(n)
        out.append(Extra(n, source))
    return out


def problems() -> list[str]:
    """One line per problem in the registration itself (an unreadable models.toml, an entry without a source)."""
    return _entries()[1]


EVALS_ENV = "CTXLAB_EVALS"  # where `eval hf:...` writes its figures (never inside checkpoints/)


def eval_dir(name: str) -> Path:
    """The folder of an outside model's eval_<task>.json files: $CTXLAB_EVALS/<name>, by default
    ~/.local/share/ctxlab/evals/<name> ($XDG_DATA_HOME respected). The Results page reads them from here."""
    root = os.environ.get(EVALS_ENV)
    if not root:
        data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
        root = str(Path(data) / "ctxlab" / "evals")
    return Path(root) / _clean(name)


def source_of(name: str) -> str | None:
    """The source of a registered model's name, or None. A shipped kind's name and a name with a colon ("live: ...")
    are never a registered model's (`_extra_models` skips the kinds' names; `_clean` drops colons): answered without
    looking at models.toml (a page run asks ~30 times)."""
    if ":" in name or name in kinds.REGISTRY:
        return None
    return next((e.source for e in extra_models() if e.name == name), None)

"""A disk cache for derived data (vocabulary type vectors, task features, atlas samples), so a fresh server's first
use is as fast as a later one.

- Where: $CTXLAB_CACHE, default ~/.cache/ctxlab; when that cannot be written, a folder in the system's temp dir.
  Never inside checkpoints/ or the repository.
- Keys: `checkpoint_key(path)` hashes a checkpoint folder's config.json and the size and mtime of its weight files, so
  a retrained model gets new entries; `key(...)` hashes any JSON-able parts (the inputs of a computation).
- Format: one .npz per entry (numpy arrays and JSON text, loaded with allow_pickle=False: no pickles). A file that
  cannot be read (cut short, corrupt, wrong contents) is removed and rebuilt; a cache that cannot be written is
  skipped. A cache problem never raises.
- Writes go to a unique temporary file first and are renamed into place, so processes sharing the folder never read
  half a file. Each kind keeps its newest MAX_ENTRIES entries.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Callable

import numpy as np

log = logging.getLogger(__name__)

ENV = "CTXLAB_CACHE"
VERSION = 1  # bump when an entry's layout changes
_META = "__meta_json__"  # the entry's JSON part, stored as a 0-d unicode array


def _writable(d: Path) -> bool:
    try:
        d.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=d, prefix=".probe-"):
            pass
        return True
    except OSError:
        return False


def cache_dir() -> Path:
    """The cache folder ($CTXLAB_CACHE or ~/.cache/ctxlab), created; a temp-dir folder when that is not writable."""
    d = Path(os.environ.get(ENV) or Path.home() / ".cache" / "ctxlab").expanduser()
    if _writable(d):
        return d
    fallback = Path(tempfile.gettempdir()) / f"ctxlab-cache-{os.getuid() if hasattr(os, 'getuid') else 'user'}"
    if fallback != d and _writable(fallback):
        log.warning("cache folder %s is not writable; using %s", d, fallback)
        return fallback
    return d  # neither writable: loads miss, saves are skipped


def key(*parts) -> str:
    """A short hash of JSON-able parts (strings, numbers, lists, dicts)."""
    text = json.dumps(parts, ensure_ascii=False, sort_keys=True, default=str)
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:20]


def checkpoint_key(path) -> str | None:
    """A hash that changes when the checkpoint folder `path` is rebuilt: its config.json's bytes and the name, size and
    mtime of every other file in it. None when the folder cannot be read (then nothing is cached)."""
    try:
        p = Path(path)
        h = hashlib.sha1((p / "config.json").read_bytes())
        for f in sorted(p.iterdir()):
            if f.is_file() and f.name != "config.json" and f.suffix in (".pt", ".json", ".npz", ".bin", ".safetensors"):
                st = f.stat()
                h.update(f"{f.name}:{st.st_size}:{st.st_mtime_ns}".encode())
        return h.hexdigest()[:20]
    except (OSError, TypeError):
        return None


MAX_ENTRIES = {"atlas": 64, "task_features": 24, "type_matrix": 24, "corpus": 12}  # per kind; others: DEFAULT_MAX
DEFAULT_MAX = 64


def prune(kind: str) -> None:
    """Keep the newest MAX_ENTRIES[kind] entries of a kind (every word typed into the atlas makes one: ~2 MB each)."""
    try:
        files = sorted(
            (
                (f.stat().st_mtime, f)
                for f in (cache_dir() / kind).iterdir()
                if f.suffix in (".npz", ".json") and not f.name.startswith(".")
            ),
            reverse=True,
        )
        for _, f in files[MAX_ENTRIES.get(kind, DEFAULT_MAX) :]:
            f.unlink(missing_ok=True)
    except OSError:
        pass


def _path(kind: str, k: str) -> Path:
    return cache_dir() / kind / f"{k}.npz"


def load(kind: str, k: str) -> tuple[dict[str, np.ndarray], object] | None:
    """(arrays, JSON part) of entry `k` of `kind`, or None when missing or unreadable (an unreadable file is removed)."""

    def parse(path: Path):
        with np.load(path, allow_pickle=False) as z:
            arrays = {n: z[n] for n in z.files}
        meta = json.loads(str(arrays.pop(_META)))
        if not isinstance(meta, dict) or meta.get("version") != VERSION:
            raise ValueError("wrong layout")
        return arrays, meta.get("data")

    return _read(_path(kind, k), parse)


def _read(path: Path, parse: Callable[[Path], object]):
    """`parse(path)`, or None when the file is missing or unreadable (cut short, corrupt, an old layout): an
    unreadable file is removed, so that the entry is rebuilt."""
    if not path.exists():
        return None
    try:
        return parse(path)
    except Exception as e:
        log.warning("cache entry %s unreadable (%s): rebuilding", path, e)
        try:
            path.unlink()
        except OSError:
            pass
        return None


def save(kind: str, k: str, arrays: dict[str, np.ndarray], data=None) -> bool:
    """Store an entry (arrays must not need pickling; `data` JSON-able). False when it could not be written."""

    def payload() -> bytes:
        arr = {n: np.asarray(a) for n, a in arrays.items()}
        if any(a.dtype.hasobject for a in arr.values()):
            raise TypeError("object arrays would be pickled")
        buf = io.BytesIO()
        np.savez(buf, **arr, **{_META: np.array(json.dumps({"version": VERSION, "data": data}, ensure_ascii=False))})
        return buf.getvalue()

    return _write(kind, _path(kind, k), payload)


def _write(kind: str, path: Path, payload: Callable[[], bytes]) -> bool:
    """Write `payload()` to `path` atomically (checkpoint.atomic_write_bytes), then prune the kind's old entries;
    False (and a warning) when it could not be written: a full disk, a read-only folder, an array needing pickles."""
    from .checkpoint import atomic_write_bytes

    try:
        atomic_write_bytes(path, payload())
        prune(kind)
        return True
    except Exception as e:
        log.warning("could not write cache entry %s: %s", path, e)
        return False


def cached(kind: str, k: str | None, build: Callable[[], tuple[dict[str, np.ndarray], object]]):
    """(arrays, data): entry `k` from disk, or `build()` stored under it. `k` None: build, store nothing."""
    if k is not None:
        hit = load(kind, k)
        if hit is not None:
            return hit
    arrays, data = build()
    if k is not None:
        save(kind, k, arrays, data)
    return arrays, data


def load_json(kind: str, k: str):
    """The JSON entry `k` of `kind`, or None when missing or unreadable (an unreadable file is removed)."""

    def parse(path: Path):
        meta = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(meta, dict) or meta.get("version") != VERSION or "data" not in meta:
            raise ValueError("wrong layout")
        return meta["data"]

    return _read(cache_dir() / kind / f"{k}.json", parse)


def save_json(kind: str, k: str, data) -> bool:
    """Store a JSON entry; False when it could not be written."""
    return _write(
        kind,
        cache_dir() / kind / f"{k}.json",
        lambda: json.dumps({"version": VERSION, "data": data}, ensure_ascii=False, separators=(",", ":")).encode(
            "utf-8"
        ),
    )


def files_key(*paths) -> str:
    """A hash of the name, size and mtime of files (a missing one counts as missing): changes when one is rewritten."""
    parts = []
    for p in paths:
        try:
            st = os.stat(p)
            parts.append([str(p), st.st_size, st.st_mtime_ns])
        except OSError:
            parts.append([str(p), None])
    return key(parts)

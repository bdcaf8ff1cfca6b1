"""The training page's run folders, without Streamlit: the temporary folder per app session that holds its live runs
and uploads, the cleanup of folders a crashed server left behind, and the zip a run downloads as.

- `LiveSession`: a temporary folder per app session with its last `MAX_RUNS` runs (older ones deleted; all of it
  when the session object is dropped). Nothing is written to checkpoints/. The folder names its owning process
  (`OWNER_FILE`); `clean_stale` removes the folders of processes that are gone (a crashed or killed server), once
  they are `STALE_H` hours old: a new session runs it (at most every `CLEAN_EVERY_S` seconds per process).
- `zip_bytes(folder)`: the checkpoint as a zip that `ctxlib.load("run.zip")` reads (checkpoint.py unpacks it).

The runs themselves (what to train, the training, the uploads' checks) are in ctxlib.live.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import time
import weakref
import zipfile
from pathlib import Path

from . import checkpoint
from .live import LiveRun, LiveSpec

log = logging.getLogger(__name__)

MAX_RUNS = 2  # runs a session keeps on disk (the older ones are deleted)
ZIP_FILES = checkpoint.ZIP_MEMBERS  # what a downloaded run holds (no resume.pt: it holds pickled optimizer state)
FOLDER_PREFIX = "ctxlab-live-"  # a session's temporary folder: <tempdir>/ctxlab-live-XXXX
OWNER_FILE = "owner.json"  # in it: {"pid", "start" (the process's start, to tell a reused pid), "created"}
STALE_H = float(os.environ.get("CTXLAB_LIVE_STALE_H", "6"))  # age before a folder whose process is gone is removed
CLEAN_EVERY_S = 600.0


# -- the session's folder ----------------------------------------------------------------------------------------
class LiveSession:
    """A temporary folder for one app session's runs and uploads; keeps the last MAX_RUNS runs' folders."""

    def __init__(self, root: str | Path | None = None):
        clean_stale_now_and_then(root)
        self.dir = Path(tempfile.mkdtemp(prefix=FOLDER_PREFIX, dir=root))
        (self.dir / OWNER_FILE).write_text(
            json.dumps({"pid": os.getpid(), "start": _process_start(os.getpid()), "created": round(time.time(), 1)}),
            encoding="utf-8",
        )
        self.runs: list[LiveRun] = []
        self._finalizer = weakref.finalize(self, shutil.rmtree, str(self.dir), True)

    def new_run(self, spec: LiveSpec) -> LiveRun:
        run = LiveRun(spec, self.dir / "pending")
        run.out = self.dir / f"run-{run.id}"
        self.runs.append(run)
        for old in self.runs[:-MAX_RUNS]:
            shutil.rmtree(old.out, ignore_errors=True)
        self.runs = self.runs[-MAX_RUNS:]
        return run

    def latest(self) -> LiveRun | None:
        return self.runs[-1] if self.runs else None

    def upload_dir(self) -> Path:
        return self.dir / "upload"

    def close(self) -> None:
        self._finalizer()


# -- stale session folders (a crashed or killed server leaves them behind) ------------------------------------------
def _process_start(pid: int) -> int | None:
    """When process `pid` started (clock ticks since boot, /proc/<pid>/stat field 22), or None where unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return int(stat[stat.rindex(")") + 2 :].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def _owner_alive(owner: dict) -> bool:
    """Whether the process recorded in a folder's owner file still runs (a reused pid with another start: no)."""
    pid = owner.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process with that pid: it runs
        pass
    start = _process_start(pid)
    return start is None or owner.get("start") is None or start == owner["start"]


def _newest_mtime(folder: Path) -> float:
    """The latest modification time of the folder and what it holds (a run writes into run-N/ every few seconds)."""
    newest = folder.stat().st_mtime
    for f in folder.rglob("*"):
        try:
            newest = max(newest, f.lstat().st_mtime)
        except OSError:
            pass
    return newest


def clean_stale(root: str | Path | None = None, max_age_h: float | None = None, now: float | None = None) -> list[Path]:
    """Remove the live-session folders under `root` (the temporary folder by default) that nothing has written to for
    `max_age_h` hours (STALE_H) and whose owning process is gone; the removed folders. A folder of a running process
    (this one's other sessions included) is never touched; one without a readable owner file (made before owners were
    recorded) counts as ownerless, so only its age decides."""
    base = Path(root) if root is not None else Path(tempfile.gettempdir())
    limit = (time.time() if now is None else now) - 3600.0 * (STALE_H if max_age_h is None else max_age_h)
    removed = []
    for d in base.glob(FOLDER_PREFIX + "*"):
        try:
            if d.is_symlink() or not d.is_dir() or d.stat().st_uid != os.getuid():
                continue
            try:
                owner = json.loads((d / OWNER_FILE).read_text(encoding="utf-8"))
            except (OSError, ValueError):
                owner = {}
            if (isinstance(owner, dict) and _owner_alive(owner)) or _newest_mtime(d) > limit:
                continue
            shutil.rmtree(d)
            removed.append(d)
            log.info("removed the stale live-training folder %s (its process is gone)", d)
        except OSError as e:  # another process removing it at the same time, a permission: leave it
            log.warning("could not remove the stale live-training folder %s: %s", d, e)
    return removed


_LAST_CLEAN: dict[str, float] = {}


def clean_stale_now_and_then(root: str | Path | None = None) -> None:
    """`clean_stale` at most every CLEAN_EVERY_S seconds per folder and process (a new session calls it); never
    raises."""
    key = str(root)
    if time.time() - _LAST_CLEAN.get(key, 0.0) < CLEAN_EVERY_S:
        return
    _LAST_CLEAN[key] = time.time()
    try:
        clean_stale(root)
    except Exception as e:  # cleaning is a courtesy: a session must start regardless
        log.warning("cleaning stale live-training folders failed: %s", e)


# -- download ----------------------------------------------------------------------------------------------------
def zip_bytes(folder: Path) -> bytes:
    """The run's checkpoint (config, vocabulary, weights and the timeline if any) as a zip, flat."""
    import io

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name in ZIP_FILES:
            f = Path(folder) / name
            if f.is_file():
                zf.write(f, name)
    return buf.getvalue()

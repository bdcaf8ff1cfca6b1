"""Checkpoints: `checkpoints/<name>/` holds config.json, vocab.json and model.pt.

config.json: {"kind", "config", "summary"} where summary is the training record
(steps, tokens seen, device, wall time, validation figures). model.pt is a plain
state dict (fp16 storage allowed) loaded with `weights_only=True`. Every write
goes to a temporary file first and is then renamed, so a crash never leaves a
half-written file behind.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: this module loads without torch
    import torch


REPO_ROOT = Path(__file__).resolve().parent.parent
CHECKPOINT_DIR = Path(os.environ.get("CTXLIB_CHECKPOINTS", REPO_ROOT / "checkpoints"))


class CheckpointError(RuntimeError):
    """A checkpoint that is missing, corrupt or does not match its config; the message names the file and the fix."""


def rebuild_command(kind: str | None) -> str:
    from . import kinds

    if kind in kinds.names(trainable=True):
        return f"python -m ctxlib train {kind}"
    return f"python -m ctxlib train {'|'.join(kinds.names(shipped=True))}"


def resolve(name_or_path: str | os.PathLike) -> Path:
    """The folder of a checkpoint name (under CHECKPOINT_DIR) or path; a .zip file is unpacked first (`unzip`)."""
    p = Path(name_or_path)
    if p.suffix.lower() == ".zip" and p.is_file():
        return unzip(p)
    if p.is_dir() or p.is_absolute() or len(p.parts) > 1:
        return p
    return CHECKPOINT_DIR / str(name_or_path)


# -- a checkpoint as a zip (the training page's download): read without pickles, size-limited, no path traversal --
ZIP_MEMBERS = ("config.json", "vocab.json", "model.pt", "timeline.json", "timeline.npz")  # the names a zip may hold
ZIP_MAX_BYTES = 1024 * 1024 * 1024  # unpacked size of all members together
ZIP_MAX_RATIO = 200  # unpacked / packed size of one member (a zip bomb is refused before it is unpacked)
_UNZIPPED: dict[tuple, Path] = {}  # (path, size, mtime) -> its unpacked folder, once per process
_UNZIP_LOCK = threading.Lock()


def _zip_error(path: Path, why: str) -> CheckpointError:
    return CheckpointError(
        f"{path} is corrupt or not a checkpoint zip ({why}). Download it again, or rebuild with: "
        f"{rebuild_command(None)}"
    )


def unzip(path: str | os.PathLike) -> Path:
    """A checkpoint zip unpacked into a temporary folder (the same folder for the same file in one process).

    Only the flat names in ZIP_MEMBERS are allowed (optionally all inside one top folder); anything else (other
    names, "..", absolute paths, links, duplicates) is refused, as are sizes over ZIP_MAX_BYTES or a suspicious
    compression ratio. Weights are then read as any checkpoint's (`torch.load(weights_only=True)`, no pickles).
    Errors are CheckpointErrors worded as a corrupt checkpoint's."""
    import stat
    import zipfile

    p = Path(path).resolve()
    try:
        st = p.stat()
    except OSError as e:
        raise CheckpointError(f"No checkpoint at {p} ({type(e).__name__}).") from e
    key = (str(p), st.st_size, st.st_mtime_ns)
    with _UNZIP_LOCK:
        if key in _UNZIPPED and (_UNZIPPED[key] / "config.json").is_file():
            return _UNZIPPED[key]
        try:
            with zipfile.ZipFile(p) as zf:
                infos = [i for i in zf.infolist() if not i.is_dir()]
                names = [i.filename for i in infos]
                tops = {n.split("/")[0] for n in names if "/" in n}
                prefix = (tops.pop() + "/") if len(tops) == 1 and all(n.count("/") == 1 for n in names) else ""
                members, total = {}, 0
                for i in infos:
                    name = i.filename[len(prefix) :]
                    if (
                        name not in ZIP_MEMBERS
                        or "\\" in i.filename
                        or i.filename.startswith("/")
                        or ".." in i.filename
                        or name in members
                    ):
                        raise _zip_error(p, f"unexpected member {i.filename!r}")
                    if stat.S_ISLNK(i.external_attr >> 16):
                        raise _zip_error(p, f"{i.filename!r} is a link")
                    total += i.file_size
                    if total > ZIP_MAX_BYTES or i.file_size > ZIP_MAX_RATIO * max(i.compress_size, 1024):
                        raise _zip_error(p, f"{i.filename!r} unpacks too large")
                    members[name] = i
                if "config.json" not in members:
                    raise _zip_error(p, "no config.json")
                stem = "".join(c if c.isalnum() or c in "._-" else "_" for c in p.stem)[:64].lstrip(".") or "checkpoint"
                out = Path(tempfile.mkdtemp(prefix="ctxlab-zip-")) / stem  # the folder's name is the model's name
                out.mkdir()
                try:
                    for name, i in members.items():
                        with zf.open(i) as src, open(out / name, "wb") as dst:  # CRC checked on read
                            left = i.file_size
                            while chunk := src.read(min(1 << 20, left + 1)):
                                left -= len(chunk)
                                if left < 0:
                                    raise _zip_error(p, f"{name!r} is longer than its header says")
                                dst.write(chunk)
                except BaseException:
                    shutil.rmtree(out.parent, ignore_errors=True)
                    raise
        except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, NotImplementedError, ValueError, OSError) as e:
            raise _zip_error(p, f"{type(e).__name__}: {e}") from e
        _UNZIPPED[key] = out
        if len(_UNZIPPED) == 1:
            atexit.register(_remove_unzipped)
        return out


def _remove_unzipped() -> None:
    for d in _UNZIPPED.values():
        shutil.rmtree(d.parent, ignore_errors=True)


def available() -> list[str]:
    """Names of checkpoint folders that have a config.json."""
    if not CHECKPOINT_DIR.is_dir():
        return []
    return sorted(d.name for d in CHECKPOINT_DIR.iterdir() if (d / "config.json").is_file())


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; checkpoints and exports are meant to be shared
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def atomic_write_json(path: Path, obj) -> None:
    atomic_write_bytes(Path(path), json.dumps(obj, ensure_ascii=False, indent=1).encode("utf-8"))


def save(
    directory: str | os.PathLike,
    kind: str,
    config: dict,
    vocab: dict,
    state_dict: dict,
    summary: dict,
    half: bool = True,
) -> Path:
    """Write a checkpoint folder. `half` stores floating-point tensors as fp16."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    sd = {}
    for k, v in state_dict.items():
        v = v.detach().cpu()
        if half and v.is_floating_point():
            v = v.half()
        sd[k] = v.contiguous()
    import io

    import torch  # imported here, not at module level: the app's home page draws before torch loads

    buf = io.BytesIO()
    torch.save(sd, buf)
    atomic_write_bytes(d / "model.pt", buf.getvalue())
    atomic_write_json(d / "vocab.json", vocab)
    # config last: a folder counts as a checkpoint only once everything else is in place
    atomic_write_json(d / "config.json", {"kind": kind, "config": config, "summary": summary})
    return d


def read_config(directory: str | os.PathLike) -> dict:
    d = resolve(directory)
    f = d / "config.json"
    if not f.is_file():
        raise CheckpointError(f"No checkpoint at {d} ({f.name} missing). Build one with: {rebuild_command(d.name)}")
    try:
        cfg = json.loads(f.read_text(encoding="utf-8"))
        if not isinstance(cfg, dict) or "kind" not in cfg or "config" not in cfg:
            raise ValueError("missing 'kind' or 'config'")
    except (ValueError, UnicodeDecodeError) as e:
        raise CheckpointError(f"{f} is corrupt ({e}). Rebuild it with: {rebuild_command(d.name)}") from e
    return cfg


def load(directory: str | os.PathLike) -> tuple[dict, dict, dict]:
    """(config.json contents, vocab.json contents, fp32 state dict). Raises CheckpointError with a clear message."""
    d = resolve(directory)
    cfg = read_config(d)
    kind = cfg.get("kind")
    fix = rebuild_command(kind)
    vf = d / "vocab.json"
    try:
        vocab = json.loads(vf.read_text(encoding="utf-8"))
    except FileNotFoundError as e:
        raise CheckpointError(f"{vf} is missing. Rebuild with: {fix}") from e
    except (ValueError, UnicodeDecodeError) as e:
        raise CheckpointError(f"{vf} is corrupt ({e}). Rebuild with: {fix}") from e
    mf = d / "model.pt"
    if not mf.is_file():
        raise CheckpointError(f"{mf} is missing. Rebuild with: {fix}")
    import torch

    try:
        sd = torch.load(mf, map_location="cpu", weights_only=True)
        if not isinstance(sd, dict):
            raise ValueError("not a state dict")
    except Exception as e:  # torch raises many types for a damaged zip/pickle
        raise CheckpointError(f"{mf} is corrupt or not a state dict ({type(e).__name__}). Rebuild with: {fix}") from e
    sd = {k: (v.float() if v.is_floating_point() else v) for k, v in sd.items()}
    return cfg, vocab, sd


def load_state_into(model: "torch.nn.Module", sd: dict, directory) -> None:
    """load_state_dict with a CheckpointError naming the file when shapes or keys do not match the config."""
    try:
        model.load_state_dict(sd, strict=True)
    except RuntimeError as e:
        first = str(e).splitlines()[0][:300]
        raise CheckpointError(
            f"{Path(directory) / 'model.pt'} does not match {Path(directory) / 'config.json'} ({first}). "
            f"Rebuild with: {rebuild_command(read_config(directory).get('kind'))}"
        ) from e

"""Resumable runs: the run folder is a loadable checkpoint at every save, plus `resume.pt`.

`resume.pt` (fp32 weights, optimizer state, step, tokens, training seconds, RNG and data positions;
see `Trainer.state_dict`) is written beside config.json / vocab.json / model.pt and is not tracked
by git. `python -m ctxlib train KIND --resume DIR` continues from it; when it is missing or
unreadable the run continues from model.pt's weights alone with a fresh optimizer (and says so).
"""

from __future__ import annotations

import io
import logging
from pathlib import Path

from .. import checkpoint

log = logging.getLogger(__name__)
RESUME_FILE = "resume.pt"


def save_state(directory, state: dict) -> Path:
    import torch

    buf = io.BytesIO()
    torch.save(state, buf)
    path = Path(directory) / RESUME_FILE
    checkpoint.atomic_write_bytes(path, buf.getvalue())
    return path


def load_state(directory) -> dict | None:
    """The saved trainer state, or None (with a warning) when there is none or it cannot be read."""
    import torch

    path = Path(directory) / RESUME_FILE
    if not path.is_file():
        log.warning(
            "%s not found: continuing from the weights in model.pt alone (fresh optimizer, new data order)", path
        )
        return None
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
        if not isinstance(state, dict) or "model" not in state or "step" not in state:
            raise ValueError("not a trainer state")
        return state
    except Exception as e:  # a damaged file: fall back, never lose the run
        log.warning("%s cannot be read (%s: %s): continuing from model.pt's weights alone", path, type(e).__name__, e)
        return None


def run_info(directory) -> dict:
    """The `run` record (kind, preset, seed, corpus, planned steps) of a run folder, for --resume."""
    cfg = checkpoint.read_config(directory)
    run = cfg.get("summary", {}).get("run")
    if not isinstance(run, dict) or "preset" not in run:
        raise checkpoint.CheckpointError(
            f"{Path(directory) / 'config.json'} has no run record to resume from; "
            f"it was not written by a resumable run (start a new one with --out)"
        )
    return {"kind": cfg["kind"], **run}


class ResumableBatches:
    """Base of the batch iterators a run can resume exactly: `_pos` is the position after the last batch handed
    out (what `state_dict` saves), `_start` where the next `__iter__` begins (what `load_state_dict` sets)."""

    _pos: dict | None = None
    _start: dict | None = None

    def state_dict(self) -> dict | None:
        return None if self._pos is None else dict(self._pos)

    def load_state_dict(self, state: dict) -> None:
        self._start = dict(state)
        self._pos = dict(state)

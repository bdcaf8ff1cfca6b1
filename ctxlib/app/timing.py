"""The timing log: one writer for the server times of page runs (widgets.record_time) and warm-up steps
(warmup._step), so bench/ reads one format.

With CTXLAB_TIMING_LOG set, `write(page, ms)` appends one line "<unix time>\t<page>\t<ms>" to that file; without it,
nothing. A log that cannot be written is logged and skipped: timing never takes a page or the warm-up down.
"""

from __future__ import annotations

import logging
import os
import time

log = logging.getLogger(__name__)


def write(page: str, ms: float) -> None:
    """Append `page`'s time `ms` (milliseconds) to $CTXLAB_TIMING_LOG, when it is set."""
    path = os.environ.get("CTXLAB_TIMING_LOG")
    if not path:
        return
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"{time.time():.3f}\t{page}\t{ms:.1f}\n")
    except OSError as e:
        log.warning("timing log %s not written: %s", path, e)

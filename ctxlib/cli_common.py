"""What the command-line modules share: the one-line failure (exit 2), user text quoted safely, input lines."""

from __future__ import annotations

import sys
from pathlib import Path


class UserError(Exception):
    pass


def fail(msg: str) -> int:
    print("error: " + " ".join(str(msg).splitlines()), file=sys.stderr)  # one line, whatever the message holds
    return 2


def shown(text: str, n: int = 40) -> str:
    """User text quoted in a message: at most `n` characters, control characters escaped (no terminal codes)."""
    t = text if len(text) <= n else text[:n] + "…"
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in t)


def read_lines(src: str) -> list[tuple[int, str]]:
    from .corpus import CorpusError
    from .user_text import decode_bytes

    data = sys.stdin.buffer.read() if src == "-" else None
    if data is None:
        p = Path(src)
        if not p.is_file():
            raise UserError(f"input file {src} not found")
        data = p.read_bytes()
    try:
        text = decode_bytes(data, name="stdin" if src == "-" else src)
    except CorpusError as e:
        raise UserError(str(e)) from e
    return [(i + 1, ln.strip()) for i, ln in enumerate(text.splitlines()) if ln.strip()]

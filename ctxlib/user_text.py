"""A user's own text: a file read whole (the pages' uploads), or a corpus file or folder streamed from disk for
training (`python -m ctxlib train KIND --corpus FILE_OR_DIR`).

UTF-8 (with or without BOM) and GB18030 are accepted; empty, binary and other files are refused with a
`CorpusError` that names the file and says what to do. Lines are NFKC-normalised like the shipped corpora.
"""

from __future__ import annotations

import hashlib
import os
import unicodedata
from pathlib import Path

from .corpus import CorpusError, Paragraph, cache_dir, jieba_module, nfkc

USER_FILE_CAP = 20 * 1024 * 1024  # bytes; larger user files are refused


def read_text_file(path: str | os.PathLike, cap: int = USER_FILE_CAP) -> str:
    """Read a user's text file: UTF-8 (with or without BOM) or GB18030, at most `cap` bytes."""
    p = Path(path)
    if not p.exists():
        raise CorpusError(f"{p}: file not found.")
    size = p.stat().st_size
    if size > cap:
        raise CorpusError(
            f"{p}: {size / 1e6:.1f} MB is over the {cap // (1024 * 1024)} MB cap; split the file or use a sample."
        )
    return decode_bytes(p.read_bytes(), name=str(p))


def decode_bytes(data: bytes, name: str = "input") -> str:
    return decode_with_encoding(data, name)[0]


def decode_with_encoding(data: bytes, name: str = "input") -> tuple[str, str]:
    """(text, encoding: 'utf-8-sig' or 'gb18030'); CorpusError (code empty, binary or encoding) for what is not text."""
    if not data.strip():
        raise CorpusError(f"{name}: the file is empty; give one sentence or paragraph per line.", "empty")
    if b"\x00" in data[:65536]:
        raise CorpusError(f"{name}: looks like a binary file (NUL bytes); give a UTF-8 or GB18030 text file.", "binary")
    for enc in ("utf-8-sig", "gb18030"):
        try:
            text = data.decode(enc)
            break
        except UnicodeDecodeError:
            continue
    else:
        raise CorpusError(f"{name}: not UTF-8 or GB18030 text; re-save the file as UTF-8.", "encoding")
    ctrl = sum(1 for c in text[:65536] if unicodedata.category(c) == "Cc" and c not in "\n\r\t")
    if ctrl > 0.01 * min(len(text), 65536):
        raise CorpusError(f"{name}: looks like a binary file (control characters); give a text file.", "binary")
    return text, enc


def user_corpus(path: str | os.PathLike) -> tuple[Paragraph, ...]:
    """A user's corpus: one sentence or paragraph a line, segmented with jieba."""
    text = nfkc(read_text_file(path))
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        raise CorpusError(f"{path}: no non-empty lines.")
    jb = jieba_module()
    return tuple(Paragraph("user", i, [w for w in jb.cut(ln) if w.strip()]) for i, ln in enumerate(lines))


# -- streamed from disk (python -m ctxlib train KIND --corpus FILE_OR_DIR) -----------------------------------
_PROBE = 65536  # bytes read to decide a file's encoding and whether it is text


def _probe_encoding(path: Path) -> str:
    """'utf-8-sig' or 'gb18030' from the first bytes of a file; CorpusError for empty, binary or other files."""
    with open(path, "rb") as f:
        head = f.read(_PROBE)
    whole = len(head) < _PROBE
    if not head.strip():
        raise CorpusError(f"{path}: the file is empty; give one sentence or paragraph per line.")
    if b"\x00" in head:
        raise CorpusError(f"{path}: looks like a binary file (NUL bytes); give a UTF-8 or GB18030 text file.")
    for enc in ("utf-8-sig", "gb18030"):
        for cut in range(1 if whole else 4):  # the probe may end inside a multi-byte character
            try:
                text = head[: len(head) - cut].decode(enc)
            except UnicodeDecodeError:
                continue
            ctrl = sum(1 for c in text if unicodedata.category(c) == "Cc" and c not in "\n\r\t")
            if ctrl > 0.01 * len(text):
                raise CorpusError(f"{path}: looks like a binary file (control characters); give a text file.")
            return enc
    raise CorpusError(f"{path}: not UTF-8 or GB18030 text; re-save the file as UTF-8.")


def user_files(path: str | os.PathLike) -> list[tuple[Path, str]]:
    """(file, encoding) of a user's corpus: one file, or every regular non-hidden file under a folder (sorted).
    CorpusError, naming the file, for a missing path, an empty folder or file, or a binary file."""
    p = Path(path)
    if not p.exists():
        raise CorpusError(f"{p}: file or folder not found.")
    if p.is_dir():
        files = sorted(
            f for f in p.rglob("*") if f.is_file() and not any(part.startswith(".") for part in f.relative_to(p).parts)
        )
        if not files:
            raise CorpusError(f"{p}: the folder has no files; put UTF-8 or GB18030 text files in it.")
    else:
        files = [p]
    return [(f, _probe_encoding(f)) for f in files]


def iter_user_lines(files: list[tuple[Path, str]]):
    """Non-empty, NFKC-normalised lines of the files, streamed (never the whole file in memory).
    A line that cannot be decoded or holds binary control characters stops with a CorpusError naming it."""
    for f, enc in files:
        with open(f, encoding=enc, newline=None) as fh:
            no = 0
            while True:
                try:
                    ln = fh.readline(1 << 20)  # a line longer than 1 MiB arrives in pieces
                except UnicodeDecodeError as e:
                    raise CorpusError(
                        f"{f}: line {no + 1} is not valid {enc} text ({e.reason}); re-save the file as UTF-8."
                    ) from e
                if not ln:
                    break
                no += 1
                ln = ln.strip()
                if not ln:
                    continue
                if "\x00" in ln:
                    raise CorpusError(f"{f}: line {no} holds NUL bytes (a binary file?); give a text file.")
                yield nfkc(ln)


def shard_lines(files, rank: int = 0, world: int = 1, first_line: int = 0):
    """(line number, line) of this rank's share of a streamed corpus: every `world`-th non-empty line, from
    `first_line` on (the line numbers count all ranks' lines, so they name a position in the whole stream)."""
    for j, line in enumerate(iter_user_lines(files)):
        if j % world == rank and j >= first_line:
            yield j, line


def buffered_shard(files, rank: int, world: int, first_line: int, size: int, make, min_last: int = 1):
    """(number of the buffer's first line, items) for this rank's share of a streamed corpus, `size` items or more
    at a time; `make(line, number)` turns one line into a list of items. A last, shorter buffer is yielded when it
    has at least `min_last` items. The streamed batches of BERT and ELMo read their corpus through this."""
    buf, start = [], None
    for j, line in shard_lines(files, rank, world, first_line):
        if start is None:
            start = j
        buf.extend(make(line, j))
        if len(buf) >= size:
            yield start, buf
            buf, start = [], None
    if buf and len(buf) >= min_last:
        yield start, buf


def count_user_lines(files) -> int:
    n = 0
    for _ in iter_user_lines(files):
        n += 1
    if n == 0:
        raise CorpusError(f"{files[0][0]}: no non-empty lines.")
    return n


def user_paragraph(line: str, index: int, words: bool = True) -> Paragraph:
    """A streamed line as a Paragraph (jieba words; with words=False one word per character, which is cheaper and
    enough for BERT without whole-word masking). The split is fixed to train: a user corpus is all training text."""
    ws = [w for w in jieba_module().cut(line) if w.strip()] if words else [c for c in line if not c.isspace()]
    return Paragraph("user", index, ws, split="train")


class UserSentences:
    """A user's corpus as a re-iterable of jieba word lists (one per non-empty line), for word2vec.

    The first pass segments the stream and writes the words to a cache file (keyed by the files' paths, sizes
    and modification times); later passes read that file line by line. Memory holds one line at a time."""

    def __init__(self, files):
        self.files = files
        key = hashlib.md5(
            repr([(str(f.resolve()), f.stat().st_size, f.stat().st_mtime_ns, e) for f, e in files]).encode("utf-8")
        ).hexdigest()[:16]
        self.path = cache_dir() / f"user-{key}.seg.txt"
        self._n: int | None = None

    def _build(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        n = 0
        with open(tmp, "w", encoding="utf-8") as out:
            for i, line in enumerate(iter_user_lines(self.files)):
                ws = user_paragraph(line, i).words
                if ws:
                    out.write("\t".join(ws) + "\n")
                    n += 1
        if n == 0:
            tmp.unlink()
            raise CorpusError(f"{self.files[0][0]}: no words in the corpus.")
        os.replace(tmp, self.path)

    def __iter__(self):
        if not self.path.exists():
            self._build()
        with open(self.path, encoding="utf-8") as f:
            for ln in f:
                yield ln.rstrip("\n").split("\t")

    def __len__(self) -> int:
        if self._n is None:
            self._n = sum(1 for _ in self)
        return self._n

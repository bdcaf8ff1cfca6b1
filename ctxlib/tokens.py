"""Tokenisation with character offsets.

Word models (word2vec, ELMo) use jieba words; the target word's character span
is always its own token (so 苹果 in 「苹果树」 is found). BERT uses characters:
each CJK character is one token, runs of ASCII letters or digits stay together.
Spans always index the caller's original text.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from dataclasses import dataclass

Token = tuple[str, int, int]  # (token, start, end) with text[start:end] == original substring

_jieba = None


def _cut(text: str) -> list[str]:
    global _jieba
    if _jieba is None:
        import jieba

        jieba.setLogLevel(logging.WARNING)
        _jieba = jieba
    return list(_jieba.cut(text))


def find_all(text: str, word: str) -> list[tuple[int, int]]:
    """Non-overlapping spans of `word` in `text`, compared after NFKC (full-width/half-width insensitive)."""
    if not word:
        return []
    spans, i = [], 0
    norm = unicodedata.normalize("NFKC", text)
    w = unicodedata.normalize("NFKC", word)
    if len(norm) != len(text):  # NFKC changed the length: fall back to raw matching
        norm, w = text, word
    while True:
        j = norm.find(w, i)
        if j < 0:
            return spans
        spans.append((j, j + len(w)))
        i = j + len(w)


def segment(text: str, target: str | None = None) -> list[Token]:
    """jieba words of `text` (whitespace dropped); each occurrence of `target` is one token."""
    pieces: list[tuple[int, int, bool]] = []
    pos = 0
    for a, b in find_all(text, target) if target else []:
        if a > pos:
            pieces.append((pos, a, False))
        pieces.append((a, b, True))
        pos = b
    if pos < len(text):
        pieces.append((pos, len(text), False))
    out: list[Token] = []
    for a, b, is_target in pieces:
        if is_target:
            out.append((text[a:b], a, b))
            continue
        off = a
        for w in _cut(text[a:b]):
            s = off
            off += len(w)
            if w.strip():
                out.append((w, s, off))
    return out


@dataclass(frozen=True)
class TargetSplit:
    """How jieba segments one sentence around the first occurrence of a target word.

    `natural`: jieba alone (`segment(text)`); `forced`: what the word models read (`segment(text, target)`: the
    target's span is one token, the text on each side segmented on its own); `index`: the target's position in
    `forced`; `carved`: jieba alone does not make that span one token (a jieba word crosses its start or end, 手机 in
    新手机, 苹果 in 苹果公司, or the span holds several jieba words), so the word models read a token that jieba would
    not have cut, and the words beside it may change too (新手机 -> 新 | 手机; 新手机 with target 机 -> 新手 | 机)."""

    natural: list[Token]
    forced: list[Token]
    index: int
    carved: bool

    @property
    def host(self) -> str:
        """The jieba words (natural segmentation) that overlap the target's span, joined: 新手机 for 手机 in 新手机."""
        _, a, b = self.forced[self.index]
        return "".join(w for w, x, y in self.natural if x < b and y > a)


def target_split(text: str, target: str) -> TargetSplit | None:
    """`TargetSplit` of the first `target` in `text`; None when `text` lacks it."""
    spans = find_all(text, target)
    if not spans:
        return None
    a, b = spans[0]
    natural, forced = segment(text), segment(text, target)
    index = next(i for i, (_, x, y) in enumerate(forced) if (x, y) == (a, b))
    return TargetSplit(natural, forced, index, not any((x, y) == (a, b) for _, x, y in natural))


def show_split(tokens: list[Token], index: int | None = None, sep: str = " | ", mark: str = "【】") -> str:
    """The tokens joined by `sep`, the one at `index` in `mark`'s brackets: 我 | 买 | 了 | 新 | 【手机】."""
    return sep.join(f"{mark[0]}{w}{mark[1]}" if i == index else w for i, (w, _, _) in enumerate(tokens))


_RUN = re.compile(r"[A-Za-z]+|[0-9]+|\S", re.UNICODE)


def char_tokens(text: str) -> list[Token]:
    """BERT-style Chinese tokens: one per CJK character (any non-space character), ASCII letter/digit runs kept whole."""
    out = []
    for m in _RUN.finditer(text):
        out.append((m.group(0), m.start(), m.end()))
    return out


def is_punct(tok: str) -> bool:
    """True for a token made only of punctuation and symbols (，。！、 … % ￥), which an LM often ranks first at
    a word boundary; False for the empty string and for any token holding a letter, digit or CJK character."""
    return bool(tok) and all(unicodedata.category(c)[0] in "PSZ" for c in tok)


def norm_token(tok: str) -> str:
    """The vocabulary form of a token (NFKC, lower-case Latin)."""
    return unicodedata.normalize("NFKC", tok).lower()


def tokens_in_span(tokens: list[Token], start: int, end: int) -> list[int]:
    """Indices of tokens overlapping [start, end)."""
    return [i for i, (_, a, b) in enumerate(tokens) if a < end and b > start]


def mask_at_end(masked: str) -> bool:
    """Whether the last [MASK] of `masked` ends the text (nothing but spaces after it). The corpus's sentences end in
    punctuation, so a model asked there mostly guesses 。 or ，: the pre-training page, lesson steps and the fill-mask
    command say so and suggest adding 。."""
    return masked.rstrip().endswith("[MASK]")

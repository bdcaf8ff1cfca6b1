"""A word (or character) vocabulary with counts, saved as plain JSON."""

from __future__ import annotations

from collections import Counter
from typing import Iterable


class Vocab:
    """Index <-> token map. Specials come first; `unk` is the index of the unknown token (or None)."""

    def __init__(
        self,
        itos: list[str],
        counts: list[int] | None = None,
        specials: list[str] | None = None,
        unk: str | None = None,
    ):
        self.itos = list(itos)
        self.counts = list(counts) if counts is not None else [0] * len(self.itos)
        if len(self.counts) != len(self.itos):
            raise ValueError("counts and itos differ in length")
        self.specials = list(specials or [])
        self.stoi = {w: i for i, w in enumerate(self.itos)}
        if len(self.stoi) != len(self.itos):
            raise ValueError("vocabulary has duplicate entries")
        self.unk = self.stoi[unk] if unk is not None else None

    @classmethod
    def build(
        cls,
        seqs: Iterable[Iterable[str]],
        min_count: int = 1,
        max_size: int | None = None,
        specials: list[str] | None = None,
        unk: str | None = None,
    ) -> "Vocab":
        c = Counter()
        for s in seqs:
            c.update(s)
        specials = list(specials or [])
        for s in specials:
            c.pop(s, None)
        items = sorted(((w, n) for w, n in c.items() if n >= min_count), key=lambda x: (-x[1], x[0]))
        if max_size is not None:
            items = items[: max(0, max_size - len(specials))]
        return cls(specials + [w for w, _ in items], [0] * len(specials) + [n for _, n in items], specials, unk)

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, w: str) -> bool:
        return w in self.stoi

    def __getitem__(self, w: str) -> int:
        return self.stoi[w]

    def get(self, w: str, default: int | None = None) -> int | None:
        i = self.stoi.get(w)
        if i is None:
            return self.unk if default is None else default
        return i

    def encode(self, words: Iterable[str]) -> list[int]:
        return [self.get(w) for w in words]

    def to_json(self) -> dict:
        unk = self.itos[self.unk] if self.unk is not None else None
        return {"itos": self.itos, "counts": self.counts, "specials": self.specials, "unk": unk}

    @classmethod
    def from_json(cls, d: dict) -> "Vocab":
        return cls(d["itos"], d.get("counts"), d.get("specials"), d.get("unk"))

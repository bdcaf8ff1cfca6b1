"""Word lists drawn from the built-in corpus (ctxlib.corpus): how often each word occurs in the training text, and the
person names People's Daily's gold tags mark (PKU tag `nr`).

The counts give nearest-word lists a frequency floor (a rare word's vector is mostly noise, so it should not be shown
as a neighbour in class); the names let generated text leave real people out (GptEncoder.generate's `banned_names`).
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Mapping

NAME_TAG = "nr"  # PKU: person name; a Chinese name is split into surname and given name, both tagged nr
# what a model trained on the built-in corpus records in summary["run"]["sources"]
BUILT_IN_SOURCES = "pd+reviews+supplement"


@functools.lru_cache(maxsize=1)
def train_word_counts() -> list[tuple[str, int]]:
    """(word, count) over the train split of all sources (what the shipped models learned from), most frequent first."""
    from . import corpus

    c = Counter()
    for p in corpus.load("all", "train"):
        c.update(p.words)
    return c.most_common()


@functools.lru_cache(maxsize=1)
def word_counts() -> dict[str, int]:
    """{word: count in the training text}: `train_word_counts` as a mapping (absent words count 0)."""
    return dict(train_word_counts())


def counts_for(summary: Mapping) -> dict[str, int] | None:
    """The word counts that match a model's training text: `word_counts()` for a model trained on the built-in
    corpus (its checkpoint summary says so, or says nothing), None for one trained on a user's corpus (no floor then)."""
    run = summary.get("run") or {}
    if run.get("corpus") or not str(run.get("sources", BUILT_IN_SOURCES)).startswith(BUILT_IN_SOURCES):
        return None
    return word_counts()


def _name_counts(paragraphs) -> tuple[Counter, Counter]:
    """(names, other words): a run of consecutive nr tokens joined into one name (江/nr 泽民/nr -> 江泽民); every other
    token counted as an ordinary word."""
    names, other = Counter(), Counter()
    for p in paragraphs:
        ws, ts = p.words, p.tags or [""] * len(p.words)
        i = 0
        while i < len(ws):
            j = i
            while j < len(ws) and ts[j] == NAME_TAG:
                j += 1
            if j > i:
                names["".join(ws[i:j])] += 1
                i = j
            else:
                other[ws[i]] += 1
                i += 1
    return names, other


@functools.lru_cache(maxsize=4)
def person_names(min_count: int = 2, min_len: int = 2) -> tuple[str, ...]:
    """Person names from People's Daily's nr tags: at least `min_count` occurrences and `min_len` characters, leaving
    out names used at least as often as an ordinary word (高原, 汪洋, 沙龙); most frequent first."""
    from . import corpus

    names, other = _name_counts(corpus.peoples_daily())
    for p in corpus.reviews():
        other.update(p.words)
    keep = [(n, c) for n, c in names.items() if c >= min_count and len(n) >= min_len and other[n] < c]
    return tuple(n for n, _ in sorted(keep, key=lambda nc: (-nc[1], nc[0])))


# the news byline words a name follows in People's Daily ("(新华社记者李鹏摄)"): a name the model makes up from
# characters is not in the nr list, but it is written after these
BYLINE_WORDS = ("新华社", "记者", "通讯员", "摄影")


@functools.lru_cache(maxsize=1)
def kept_out() -> tuple[str, ...]:
    """What a class-safe writer never completes: the corpus's person names and the byline words before them."""
    return person_names() + BYLINE_WORDS


def completions(names) -> dict[str, frozenset[str]]:
    """{name minus its last character: the last characters that complete a name}: what a writer must not add after
    text ending in the key. 李鹏, 李岚清 -> {"李": {"鹏"}, "李岚": {"清"}}."""
    out: dict[str, set[str]] = {}
    for n in names:
        if len(n) >= 2:
            out.setdefault(n[:-1], set()).add(n[-1])
    return {k: frozenset(v) for k, v in out.items()}


def banned_next(text: str, table: Mapping[str, frozenset[str]], longest: int) -> set[str]:
    """The characters that, written after `text`, would complete a name in `table` (`completions`; `longest` = its
    longest key): the union over every suffix of `text` that is a key."""
    out: set[str] = set()
    for k in range(1, min(longest, len(text)) + 1):
        out |= table.get(text[-k:], frozenset())
    return out

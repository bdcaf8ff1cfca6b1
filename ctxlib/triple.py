"""The home page's three-sentence demo, without Streamlit: is the word closer to itself in the same sense?

margin = cos(A, B) - cos(A, C), where A and B use the word in one sense and C in another: a margin above 0 means the
model (at that layer) puts the same-sense pair closer. Read against the held-out pair-ranking accuracy
(`analysis.pair_ranking`: the share of such triples with a positive margin), one triple is read against many.

ELMo's layers concatenate a forward LSTM state (the words up to the word) and a backward one (the words from it to
the end); `views` splits them, so each half is compared on its own. When two sentences share everything left of the
word, the forward half cannot tell them apart (`shared_context`), and neither can a left-to-right model (GPT).

A margin is read against a noise band (`noise_band`): the margins that three sentences of ONE sense give at the same
view (the built-in example sets, `ctxlib.examples`), i.e. how large a margin context alone produces. The summary
(`verdict`) names a winner only outside the band, and only among whole layers (never an ELMo half).

`segmentations` says, per sentence, whether jieba alone would have cut the word differently (the word models read the
word as one token whatever jieba says: 苹果 is cut out of 苹果公司).

`vocab_status` says how a model handles a word it may never have seen: word2vec has no vector; ELMo builds one from
the characters; BERT and GPT read characters, some of which may be [UNK].
"""

from __future__ import annotations

import functools
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .analysis import pair_ranking
from .tokens import TargetSplit, find_all, target_split
from .vecmath import cosine, cosine_matrix, unit_rows

log = logging.getLogger(__name__)
HALVES = ("forward", "backward")
SAME = 1 - 1e-6  # cosines above this count as "identical vectors"


@dataclass(frozen=True)
class View:
    """A model's layer, or one half of an ELMo biLSTM layer (`half` "forward"/"backward"; None: the whole vector)."""

    layer: int
    half: str | None = None


def views(kind: str, n_layers: int) -> list[View]:
    """The rows a model gets: every layer; for ELMo each biLSTM layer (1..) is followed by its two halves (layer 0,
    the char-CNN vector duplicated to both halves, is not split: its halves are equal)."""
    out = []
    for j in range(n_layers):
        out.append(View(j))
        if kind == "elmo" and j > 0:
            out += [View(j, h) for h in HALVES]
    return out


def view_vectors(vecs: np.ndarray, view: View) -> np.ndarray:
    """(n, dim) vectors of `view` from (n, n_layers, dim): the layer, or its forward (first) or backward (second) half."""
    X = np.asarray(vecs)[:, view.layer, :]
    if view.half is None:
        return X
    d = X.shape[-1] // 2
    return X[:, :d] if view.half == "forward" else X[:, d:]


@dataclass(frozen=True)
class MarginRow:
    view: View
    cos_ab: float  # same sense
    cos_ac: float  # other sense

    @property
    def margin(self) -> float:
        return self.cos_ab - self.cos_ac

    @property
    def same_ab(self) -> bool:
        """A's and B's vectors are identical (cos 1): the view sees no difference between the two sentences."""
        return self.cos_ab > SAME


def margins(vecs: np.ndarray, kind: str) -> list[MarginRow]:
    """One row per view of the word's vectors in A, B, C (`vecs`: (3, n_layers, dim))."""
    vecs = np.asarray(vecs, dtype=np.float64)
    if vecs.ndim != 3 or len(vecs) != 3:
        raise ValueError(f"vecs must be (3, n_layers, dim) for sentences A, B, C, got {vecs.shape}")
    rows = []
    for v in views(kind, vecs.shape[1]):
        a, b, c = view_vectors(vecs, v)
        rows.append(MarginRow(v, cosine(a, b), cosine(a, c)))
    return rows


def best_row(rows: list[MarginRow]) -> MarginRow | None:
    """The row with the largest margin (ties: the lower layer), among rows that see a difference between the
    sentences (a context-free layer, whose three vectors are identical, is left out); None if no row does."""
    return max((r for r in rows if not (r.same_ab and r.cos_ac > SAME)), key=lambda r: r.margin, default=None)


def full_rows(rows: list[MarginRow]) -> list[MarginRow]:
    """The rows of whole layers: what a model outputs (word2vec's type vector, ELMo's layers, BERT's and GPT's), not
    ELMo's forward/backward halves, which no task reads on their own."""
    return [r for r in rows if r.view.half is None]


@dataclass(frozen=True)
class Verdict:
    """The summary of one model: `row` (its whole layer with the largest margin, `best_row` of `full_rows`), `band`
    (the noise band at that layer, or None when unknown), and `outcome`: "same" (the same-sense pair is closer, by more
    than the band), "other" (the other-sense pair is closer, by more than the band), "unclear" (inside the band)."""

    row: MarginRow
    band: float | None
    outcome: str


def verdict(rows: list[MarginRow], bands: dict[View, float] | None = None) -> Verdict | None:
    """`Verdict` from a model's rows and its noise bands ({view: band}); None when every whole layer is context-free
    (word2vec). A half never wins, even with the largest margin of all."""
    best = best_row(full_rows(rows))
    if best is None:
        return None
    band = (bands or {}).get(best.view)
    if band is not None and abs(best.margin) <= band:
        return Verdict(best, band, "unclear")
    return Verdict(best, band, "same" if best.margin > 1e-9 else "other")


def inside_band(margin: float, band: float | None) -> bool:
    return band is not None and abs(margin) <= band


def segmentations(word: str, texts) -> list[TargetSplit | None]:
    """Per sentence, `tokens.TargetSplit` of `word`'s first occurrence (the one compared): jieba's own segmentation,
    the word models' (the word forced to one token), and whether the word was carved out (`carved`); None where the
    sentence lacks the word."""
    return [target_split(t, word) for t in texts]


def shared_context(s1: str, s2: str, word: str) -> tuple[bool, bool]:
    """(left, right): the two sentences are identical before (after) the first occurrence of `word`. Left: ELMo's
    forward half and GPT see the same input up to the word, so their vectors of it are identical; right: the same
    for ELMo's backward half. (False, False) when the word is missing from one of them."""
    f1, f2 = find_all(s1, word), find_all(s2, word)
    if not f1 or not f2:
        return False, False
    (a1, b1), (a2, b2) = f1[0], f2[0]
    return s1[:a1].strip() == s2[:a2].strip(), s1[b1:].strip() == s2[b2:].strip()


# -- the inputs ----------------------------------------------------------------------------------------------------
MAX_CHARS = 120  # a longer sentence is cut to a window around the word (BERT and GPT take 126 characters)


def check_triple(word: str, a: str, b: str, c: str):
    """Clean the demo's inputs: (word, (A, B, C) cut to MAX_CHARS around the word, notes). Never raises; a note of
    level "error" (ids in strings/<lang>/triple.toml) means nothing can be compared. Notes carry user text verbatim:
    escape the rendered message."""
    from .examples import Note, Numbers, window

    word, texts = (word or "").strip(), [(s or "").strip() for s in (a, b, c)]
    if not word or not all(texts):
        return word, tuple(texts), [Note("error", "triple.input.fill_in")]
    missing = [lab for lab, s in zip("ABC", texts) if not find_all(s, word)]
    if missing:
        return (
            word,
            tuple(texts),
            [Note("error", "triple.input.word_missing", {"sentences": Numbers(tuple(missing)), "word": word})],
        )
    same = [f"{x}={y}" for x, y in ("AB", "AC", "BC") if texts["ABC".index(x)] == texts["ABC".index(y)]]
    if same:
        return word, tuple(texts), [Note("error", "triple.input.same", {"pairs": Numbers(tuple(same))})]
    notes, cut = [], []
    for i, s in enumerate(texts):
        if len(s) > MAX_CHARS:
            ((x, y),) = find_all(s, word)[:1]
            texts[i] = window(s, x, y, MAX_CHARS)
            cut.append("ABC"[i])
    if cut:
        notes.append(Note("info", "triple.input.windowed", {"sentences": Numbers(tuple(cut)), "max": MAX_CHARS}))
    return word, tuple(texts), notes


# -- the noise band -------------------------------------------------------------------------------------------------
NOISE_Q = 0.95  # the band holds this share of the margins of same-sense triples


def null_margins(X: np.ndarray, labels: list) -> np.ndarray:
    """cos(a,b) - cos(a,c) of every ordered triple (a, b, c) of distinct rows of `X` (n, dim) with one label: margins
    where there is no sense to tell apart. Symmetric around 0 (b and c swap)."""
    X = np.asarray(X, dtype=np.float64)
    S = cosine_matrix(X)
    out = []
    lab = np.asarray(labels, dtype=object)
    for g in dict.fromkeys(labels):
        idx = np.flatnonzero(lab == g)
        for a in idx:
            r = S[a, idx[idx != a]]  # cos(a, x) for the group's other rows
            d = r[:, None] - r[None, :]
            out.append(d[~np.eye(len(r), dtype=bool)])
    return np.concatenate(out) if out else np.zeros(0)


def noise_band(
    kind: str, vectors: dict[str, np.ndarray], labels: dict[str, list], q: float = NOISE_Q
) -> dict[View, float]:
    """{view: the `q` quantile of |margin| over the same-sense triples of every set} from {word: (n, n_layers, dim)}
    and {word: sense labels}: a margin whose size is at most this is within what context alone gives."""
    pooled: dict[View, list[np.ndarray]] = {}
    for w, V in vectors.items():
        for v in views(kind, V.shape[1]):
            pooled.setdefault(v, []).append(null_margins(view_vectors(V, v), labels[w]))
    out = {}
    for v, ms in pooled.items():
        m = np.abs(np.concatenate(ms))
        if len(m):
            out[v] = float(np.quantile(m, q))
    return out


def example_noise(enc, q: float = NOISE_Q) -> dict[View, float]:
    """`noise_band` of `enc` on the built-in example sets (their sentences encoded once; a set the model cannot encode
    is skipped). Kept in the disk cache (`ctxlib.cache`) per checkpoint, so a server pays for it once."""
    from . import cache
    from .examples import sets_for

    EXAMPLE_SETS = sets_for(getattr(enc, "language", "zh"))  # an English model: the English example sets
    path = getattr(enc, "path", None)
    ck = cache.checkpoint_key(path) if path is not None else None
    k = cache.key("noise_band", 1, enc.kind, ck, q, sorted(EXAMPLE_SETS)) if ck else None
    if k is not None and (hit := cache.load_json("noise_band", k)) is not None:
        return {View(int(j), h): float(b) for j, h, b in hit}
    vectors, labels = {}, {}
    for name, ex in EXAMPLE_SETS.items():
        try:
            vectors[name] = enc.word_vectors([t for t, _ in ex["sentences"]], ex["word"])
        except Exception as e:  # noqa: BLE001 - a word the model cannot encode: the other sets still count
            log.info("noise band of %s: set %s skipped: %s", enc.kind, name, e)
            continue
        labels[name] = [s for _, s in ex["sentences"]]
    bands = noise_band(enc.kind, vectors, labels, q)
    if k is not None:
        cache.save_json("noise_band", k, [[v.layer, v.half, b] for v, b in bands.items()])
    return bands


# -- held-out pair ranking per view ------------------------------------------------------------------------------
def ranking_by_view(kind: str, vectors: dict[str, np.ndarray], labels: dict[str, list]) -> dict[View, float]:
    """{view: mean over words of pair_ranking} from {word: (n, n_layers, dim)} and {word: sense labels}."""
    out: dict[View, list[float]] = {}
    for w, V in vectors.items():
        for v in views(kind, V.shape[1]):
            out.setdefault(v, []).append(pair_ranking(view_vectors(V, v), labels[w]))
    return {v: float(np.nanmean(ps)) for v, ps in out.items()}


def heldout_ranking(enc, set_name: str = "frozen") -> dict[View, float]:
    """Pair ranking per view of `enc` on a held-out sense set of `evaluation.heldout` (encodes its sentences)."""
    from .encoder import WordNotFound
    from .evaluation.heldout import sense_sets

    sets, vectors = sense_sets(set_name), {}
    for w, items in sets.items():
        try:
            vectors[w] = enc.word_vectors([t for t, _ in items], w)
        except WordNotFound:  # a sentence longer than the model reads: the other words still count
            continue
    return ranking_by_view(enc.kind, vectors, {w: [s for _, s in items] for w, items in sets.items() if w in vectors})


def stored_ranking(path: Path | str, layer_names: list[str], set_name: str = "frozen") -> dict[View, float] | None:
    """Per-layer pair ranking of `set_name` from an eval_senses.json (`python -m ctxlib eval MODEL --task senses`),
    or None when the file is missing, unreadable, of other layers, or lacks the set. Whole layers only (no halves)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if list(data["layer_names"]) != list(layer_names):
            return None
        pr = [float(x) for x in data["sets"][set_name]["pair_ranking"]]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return {View(j): p for j, p in enumerate(pr)} if len(pr) == len(layer_names) else None


@functools.lru_cache(maxsize=8)
def sense_set_size(set_name: str = "frozen") -> tuple[int, int]:
    """(words, sentences) of a held-out sense set (read once a process: the sets are frozen files)."""
    from .evaluation.heldout import sense_sets

    sets = sense_sets(set_name)
    return len(sets), sum(len(v) for v in sets.values())


@functools.lru_cache(maxsize=1)
def frozen_words() -> list[str]:
    """The words of the frozen held-out sense set (none of them in the supplement), in file order."""
    from .evaluation.heldout import sense_sets

    return list(sense_sets("frozen"))


@functools.lru_cache(maxsize=1)
def supplement_words() -> frozenset:
    """The words of the teaching supplement's train split that have two senses: what a sense-tuned model was tuned on."""
    from .supplement import train_senses

    return frozenset(train_senses())


# -- unseen words ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class VocabStatus:
    """How a model takes `word`: "known" (a word or characters it was trained on); "missing" (a word model without a
    vector for it: word2vec); "chars" (a word model that builds it from its characters: ELMo, the word being outside
    its LM's output vocabulary); "unk_chars" (a character model, some of whose characters are [UNK]: `unk`)."""

    status: str
    unk: list[str] = field(default_factory=list)


def vocab_status(enc, word: str) -> VocabStatus:
    """`VocabStatus` of `word` for `enc`, from the word encoded alone (per-token `known` flags, where the model sets
    them) and `enc.in_vocab`."""
    if enc.word_level and not enc.in_vocab(word):
        return VocabStatus("missing")
    e = enc.encode([word], target=word)[0]
    idx = e.word_indices(word) or list(range(len(e.tokens)))
    known = e.known if e.known is not None else [True] * len(e.tokens)
    unknown = [e.tokens[j] for j in idx if not known[j]]
    if not unknown:
        return VocabStatus("known")
    return VocabStatus("chars") if enc.word_level else VocabStatus("unk_chars", unknown)


def random_pair_cosines(M: np.ndarray, pairs: int = 4000, seed: int = 0) -> tuple[float, float]:
    """(mean, 95th percentile) of the cosine between random pairs of distinct rows of `M` (n, dim): how similar two
    unrelated vocabulary words typically are at one layer, the scale a nearest-word cosine is read on."""
    X = np.asarray(M, dtype=np.float64)
    X = unit_rows(X)
    if len(X) < 2:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    i, j = rng.integers(0, len(X), pairs), rng.integers(0, len(X), pairs)
    keep = i != j
    c = np.sum(X[i[keep]] * X[j[keep]], axis=1)
    return float(c.mean()), float(np.percentile(c, 95))


def nearest_top1(M: np.ndarray, sample: int = 300, seed: int = 0) -> float:
    """Median cosine of a vocabulary word's nearest other word (rows of `M`, (n, dim), a sample of `sample` words):
    what a real nearest neighbour typically reaches at one layer."""
    X = np.asarray(M, dtype=np.float64)
    X = unit_rows(X)
    if len(X) < 2:
        return float("nan")
    idx = np.random.default_rng(seed).choice(len(X), min(sample, len(X)), replace=False)
    S = X[idx] @ X.T
    S[np.arange(len(idx)), idx] = -np.inf
    return float(np.median(S.max(1)))

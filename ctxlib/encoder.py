"""The one interface every page uses: `ctxlib.load(name).encode(texts)`.

An Encoder turns texts into per-token, per-layer vectors:
    out.tokens, out.spans, out.layers (n_layers, n_tokens, dim), out.layer_names, out.attentions
Layer 0 is always the non-contextual layer. word2vec has only that layer.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import checkpoint, kinds
from .tokens import Token, find_all, tokens_in_span
from .vecmath import unit_rows

MAX_CHARS = 2000  # longer texts are truncated by encode(); pages tell the user


class WordNotFound(ValueError):
    """The target word is not in text number `index`."""

    def __init__(self, word: str, index: int, text: str):
        self.word, self.index, self.text = word, index, text
        short = text if len(text) <= 40 else text[:40] + "…"
        super().__init__(f"'{word}' does not occur in sentence {index + 1} ({short!r}).")


class OutOfVocabulary(KeyError):
    """A word the model has no vector for (word2vec only; ELMo and BERT build vectors from characters)."""

    def __init__(self, word: str, model: str):
        self.word, self.model = word, model
        super().__init__(word)

    def __str__(self):
        return f"'{self.word}' is not in the {self.model} vocabulary (it has no vector for unseen words)."


@dataclass
class Encoded:
    """One text encoded: token strings, character spans into `text`, and every layer's vectors."""

    text: str
    tokens: list[str]
    spans: list[tuple[int, int]]
    layers: np.ndarray  # (n_layers, n_tokens, dim) float32
    layer_names: list[str]
    attentions: np.ndarray | None = None  # (n_layers, n_heads, n_tokens, n_tokens) or None
    truncated: bool = False  # the text was longer than the model takes; only a prefix was encoded
    known: list[bool] | None = None  # per token: in the training vocabulary
    segment_ids: list[int] | None = None  # a sentence pair (BERT's encode_pair): 0 for [CLS] A [SEP], 1 for B [SEP]

    def token_indices(self, start: int, end: int) -> list[int]:
        return tokens_in_span([(t, a, b) for t, (a, b) in zip(self.tokens, self.spans)], start, end)

    def word_indices(self, word: str, occurrence: int = 0) -> list[int]:
        """Indices of the tokens covering the `occurrence`-th `word` in the text (the last one if there are fewer);
        [] when the word is absent or fell outside the encoded part."""
        found = find_all(self.text, word)
        return self.token_indices(*found[min(occurrence, len(found) - 1)]) if found else []


class Encoder:
    """Base class. Subclasses implement `encode_tokens` (and usually `tokenize`).

    The public batch API, for callers that tokenize once and encode many times (training loops, task heads):
    `tokenize(text, target)` gives the model's tokens with character spans, `encode_tokens(batch, texts)` encodes
    tokenized texts; `encode(texts)` is the two together, in batches."""

    kind = "base"
    word_level = True  # False for BERT (character tokens pooled into words)

    def __init__(self, name: str, config: dict, summary: dict, path: Path | None = None):
        self.name = name
        self.config = config
        self.summary = summary
        self.path = path

    # -- to implement --------------------------------------------------------------
    @property
    def layer_names(self) -> list[str]:
        raise NotImplementedError

    def tokenize(self, text: str, target: str | None = None) -> list[Token]:
        """The model's tokens of `text` as (token, start, end); with `target`, a word model keeps its span one token."""
        from .tokens import segment

        return segment(text, target)

    HAS_ATTENTIONS = False  # True: encode_tokens takes need_weights (a Transformer)

    def encode_tokens(self, batch: list[list[Token]], texts: list[str]) -> list[Encoded]:
        """Encode tokenized texts (`tokenize`'s output for each text) in one batch."""
        raise NotImplementedError

    def in_vocab(self, word: str) -> bool:
        return True

    # -- shared ----------------------------------------------------------------------
    @property
    def dim(self) -> int:
        return int(self.config.get("dim", self.config.get("hidden", 0)))

    @property
    def max_len(self) -> int:
        """The most tokens one text may have (BERT: [CLS] and [SEP] included); 10**6 for models without a limit."""
        return int(self.config.get("max_len", 10**6))

    def encode(
        self, texts: list[str], target: str | None = None, batch_size: int = 32, attentions: bool = True
    ) -> list[Encoded]:
        """Encode each text. With `target`, the target's span is kept as one token (word models). With
        `attentions=False` a Transformer skips its attention maps (`.attentions` is None): the vectors are the same,
        and a caller that reads only vectors saves about a quarter of the encode."""
        if isinstance(texts, str):
            raise TypeError("encode() takes a list of texts")
        out: list[Encoded] = []
        for i in range(0, len(texts), batch_size):
            chunk = list(texts[i : i + batch_size])
            cut = [t[:MAX_CHARS] for t in chunk]
            toks = [self.tokenize(t, target) for t in cut]
            encs = (
                self.encode_tokens(toks, cut)
                if attentions or not self.HAS_ATTENTIONS
                else self.encode_tokens(toks, cut, need_weights=False)
            )
            for e, t in zip(encs, chunk):
                e.truncated = e.truncated or len(t) > MAX_CHARS
            out.extend(encs)
        return out

    def word_vectors(self, texts: list[str], word: str, occurrence: int = 0) -> np.ndarray:
        """(n_texts, n_layers, dim): the vector of `word` in each text, mean-pooled over its tokens.

        Raises WordNotFound naming the first text without the word.
        """
        vecs, _ = self.word_vectors_with_tokens(texts, word, occurrence)
        return vecs

    def word_vectors_with_tokens(self, texts: list[str], word: str, occurrence: int = 0):
        """As word_vectors, plus for each text the list of token strings that were pooled."""
        for i, t in enumerate(texts):
            if not find_all(t[:MAX_CHARS], word):
                raise WordNotFound(word, i, t)
        out, pooled = [], []
        for i, e in enumerate(self.encode(texts, target=word)):
            idx = e.word_indices(word, occurrence)
            if not idx:  # the word lies beyond what the model encodes (e.g. BERT's max length)
                raise WordNotFound(word, i, e.text)
            out.append(e.layers[:, idx, :].mean(axis=1))
            pooled.append([e.tokens[j] for j in idx])
        return np.stack(out).astype(np.float32), pooled

    # -- nearest vocabulary words ------------------------------------------------------
    def type_matrix(self, max_words: int = 10000) -> tuple[list[str], np.ndarray]:
        """(words, (n, n_layers, dim) unit vectors): the `max_words` most frequent vocabulary words, each encoded
        alone (no context), every layer from one encoding pass. Cached per `max_words` in memory and, for a loaded
        checkpoint, on disk (ctxlib.cache, keyed by the checkpoint's files), so a fresh server does not recompute it."""
        cache = self.__dict__.setdefault("_type_cache", {})
        if max_words not in cache:
            from . import cache as disk

            ck = disk.checkpoint_key(self.path) if self.path is not None else None
            k = disk.key("type_matrix", self.kind, self.name, ck, max_words) if ck else None
            arrays, _ = disk.cached("type_matrix", k, lambda: self._type_matrix(max_words))
            cache[max_words] = ([str(w) for w in arrays["words"]], arrays["matrix"])
        return cache[max_words]

    def _type_matrix(self, max_words: int) -> tuple[dict[str, np.ndarray], None]:
        words = self.vocab_words(max_words)
        mats = []
        for i in range(0, len(words), 256):
            encs = self.encode(words[i : i + 256], batch_size=256)
            # pooled over the word's own tokens (BERT's [CLS]/[SEP] left out), as `word_vectors` pools a token
            mats.append(np.stack([e.layers[:, e.word_indices(e.text) or slice(None)].mean(1) for e in encs]))
        m = (np.concatenate(mats) if mats else np.zeros((0, len(self.layer_names), self.dim))).astype(np.float32)
        return {"words": np.array(list(words), dtype=str), "matrix": unit_rows(m)}, None

    def type_vectors(self, layer: int, max_words: int = 10000) -> tuple[list[str], np.ndarray]:
        """(words, (n, dim) unit vectors): `type_matrix` read at `layer`."""
        words, m = self.type_matrix(max_words)
        return words, m[:, layer, :]

    def vocab_words(self, max_words: int = 10000) -> list[str]:
        """The most frequent vocabulary words (no specials), most frequent first."""
        raise NotImplementedError

    def nearest_words(
        self,
        vector: np.ndarray,
        layer: int,
        topn: int = 5,
        exclude: tuple[str, ...] = (),
        counts: Mapping[str, int] | None = None,
        min_count: int = 0,
    ) -> list[tuple[str, float]]:
        """Vocabulary words whose context-free vector at `layer` is closest (cosine) to `vector`; with `counts` (word
        -> count in the training text, e.g. lexicon.counts_for(self.summary)) only words seen at least `min_count` times."""
        words, m = self.type_vectors(layer)
        v = unit_rows(vector)
        sims = m @ v
        order = np.argsort(-sims)
        out = []
        for i in order:
            if words[i] in exclude or (counts is not None and counts.get(words[i], 0) < min_count):
                continue
            out.append((words[i], float(sims[i])))
            if len(out) == topn:
                break
        return out

    def info(self) -> dict:
        return {
            "name": self.name,
            "kind": self.kind,
            "layers": self.layer_names,
            "dim": self.dim,
            "config": self.config,
            "summary": self.summary,
            "path": str(self.path) if self.path else None,
        }


HF_PREFIX = "hf:"  # ctxlib.load("hf:PATH") / "hf:NAME": a Hugging Face Transformers checkpoint (ctxlib.models.hf)


def load(name_or_path: str | os.PathLike, download: bool = False) -> Encoder:
    """Load a checkpoint by name (a folder under checkpoints/) or path, or a Transformers model as "hf:PATH" or
    "hf:NAME" (offline unless `download`). Raises CheckpointError with what to do."""
    if isinstance(name_or_path, str) and name_or_path.startswith(HF_PREFIX):
        return kinds.encoder_class("hf").from_spec(name_or_path[len(HF_PREFIX) :], download=download)
    d = checkpoint.resolve(name_or_path)
    cfg = checkpoint.read_config(d)
    kind = cfg["kind"]
    if kind not in kinds.REGISTRY or kinds.get(kind).family == "any":
        raise checkpoint.CheckpointError(
            f"{d / 'config.json'}: unknown model kind {kind!r} (expected one of {list(kinds.names(trainable=True))})."
        )
    return kinds.encoder_class(kind).from_checkpoint(d)


def rank_in(probs, index: int) -> tuple[int, float]:
    """(rank, probability) of entry `index` of a full probability vector (numpy or CPU torch, one dimension): rank 1
    is the most likely; entries tied with it share its rank (1 + the number of entries strictly more likely)."""
    p = np.asarray(probs)
    if p.ndim != 1 or not 0 <= index < p.size:
        raise ValueError(f"index {index} is outside a probability vector of shape {p.shape}")
    return 1 + int((p > p[index]).sum()), float(p[index])

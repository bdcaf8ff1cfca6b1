"""word2vec's configuration, its vectors (`KeyedVectors`, gensim-like read access) and the Encoder.

Only the input vectors are shipped; the Encoder reads them without importing torch (`read_state_numpy`).
Training (skip-gram and CBOW with negative sampling) is in ctxlib.training.word2vec.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import checkpoint
from ..encoder import MAX_CHARS, Encoded, Encoder, WordNotFound
from ..tokens import Token, find_all
from ..vecmath import cosine, unit_rows
from ..vocab import Vocab

LAYER_NAME = "type vector (word2vec)"


@dataclass
class Word2VecConfig:
    sg: bool = True  # skip-gram (True) or CBOW (False)
    dim: int = 128  # vector size
    window: int = 5  # max words on each side; the effective window is drawn from 1..window
    negative: int = 5  # negative samples per positive example
    sample: float = 1e-3  # subsampling threshold (0 = off)
    min_count: int = 5  # drop words rarer than this
    epochs: int = 5  # passes over the corpus
    lr: float = 0.025  # initial learning rate (gensim's alpha)
    min_lr: float = 1e-4  # final learning rate (gensim's min_alpha)
    batch_size: int = 256  # center words (with their windows) per SGD step
    max_row_updates: int = (
        128  # a table row hit more often in one step has its summed update scaled to this many (0 = off)
    )
    seed: int = 0  # vector init, subsampling, windows and negatives
    max_vocab: int = 50000  # keep at most this many most frequent words (0 = no cap)
    ns_exponent: float = 0.75  # exponent of the unigram distribution for negatives
    shared_negatives: bool = True  # skip-gram: one negative set per window instead of per pair

    def __post_init__(self):
        if self.dim <= 0 or self.window <= 0 or self.negative <= 0 or self.epochs <= 0 or self.batch_size <= 0:
            raise ValueError("dim, window, negative, epochs and batch_size must be positive")
        if self.min_count < 1 or self.max_vocab < 0 or self.max_row_updates < 0:
            raise ValueError("min_count must be >= 1, max_vocab and max_row_updates >= 0")
        if not 0 <= self.sample < 1:
            raise ValueError("sample must be in [0, 1)")
        if not 0 < self.min_lr <= self.lr:
            raise ValueError("need 0 < min_lr <= lr")


# -- vectors users already know ---------------------------------------------------------------
class KeyedVectors:
    """gensim-like read access: kv["词"], "词" in kv, most_similar, similarity, index_to_key, vectors."""

    def __init__(self, words: list[str], vectors: np.ndarray, counts: list[int] | None = None):
        if len(words) != len(vectors):
            raise ValueError(f"{len(words)} words but {len(vectors)} vectors")
        self.index_to_key = list(words)
        self.key_to_index = {w: i for i, w in enumerate(self.index_to_key)}
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)  # (V, D)
        self.counts = list(counts) if counts is not None else None
        self._normed = None

    def __len__(self) -> int:
        return len(self.index_to_key)

    def __contains__(self, word: str) -> bool:
        return word in self.key_to_index

    def __getitem__(self, word: str) -> np.ndarray:
        if word not in self.key_to_index:
            raise KeyError(f"'{word}' is not in the vocabulary")
        return self.vectors[self.key_to_index[word]]

    @property
    def vector_size(self) -> int:
        return self.vectors.shape[1]

    def get_normed_vectors(self) -> np.ndarray:
        if self._normed is None:
            self._normed = unit_rows(self.vectors)
        return self._normed

    def similarity(self, w1: str, w2: str) -> float:
        return cosine(self[w1], self[w2])

    def most_similar(self, positive=None, negative=None, topn: int = 10) -> list[tuple[str, float]]:
        """Words closest (cosine) to the mean of the unit vectors of `positive` minus those of `negative`.

        Entries may be words or vectors; input words are left out of the answer, as in gensim.
        """
        positive = [positive] if isinstance(positive, (str, np.ndarray)) else list(positive or [])
        negative = [negative] if isinstance(negative, (str, np.ndarray)) else list(negative or [])
        if not positive and not negative:
            raise ValueError("most_similar needs at least one positive or negative word")
        m = self.get_normed_vectors()
        parts, skip = [], set()
        for sign, items in ((1.0, positive), (-1.0, negative)):
            for x in items:
                if isinstance(x, str):
                    self[x]  # KeyError for an unknown word
                    skip.add(self.key_to_index[x])
                    parts.append(sign * m[self.key_to_index[x]])
                else:
                    v = np.asarray(x, dtype=np.float32)
                    parts.append(sign * unit_rows(v))
        q = np.mean(parts, axis=0)
        q = unit_rows(q)
        sims = m @ q  # (V,)
        k = min(len(sims), topn + len(skip))
        top = np.argpartition(-sims, k - 1)[:k] if k < len(sims) else np.arange(len(sims))
        top = top[np.argsort(-sims[top], kind="stable")]
        return [(self.index_to_key[i], float(sims[i])) for i in top if i not in skip][:topn]


_NP_STORAGE = {
    "HalfStorage": np.float16,
    "FloatStorage": np.float32,
    "DoubleStorage": np.float64,
    "LongStorage": np.int64,
}


def read_state_numpy(path: Path) -> dict[str, np.ndarray]:
    """Read a state dict of plain CPU tensors written by torch.save, with numpy only.

    A restricted unpickler: only the three globals torch writes for such tensors are allowed (like weights_only).
    """
    import collections
    import pickle
    import zipfile

    with zipfile.ZipFile(path) as z:
        root = z.namelist()[0].split("/")[0]
        if z.read(f"{root}/byteorder") != b"little":
            raise ValueError("not a little-endian checkpoint")

        def rebuild(storage, offset, size, stride, *_):
            item = storage.itemsize
            return np.lib.stride_tricks.as_strided(
                storage[offset:], tuple(size), tuple(s * item for s in stride)
            ).copy()

        class Restricted(pickle.Unpickler):
            def find_class(self, module, name):
                if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
                    return rebuild
                if (module, name) == ("collections", "OrderedDict"):
                    return collections.OrderedDict
                if module == "torch" and name in _NP_STORAGE:
                    return name
                raise pickle.UnpicklingError(f"{module}.{name} is not allowed in a checkpoint")

            def persistent_load(self, pid):
                _, storage, key, _, numel = pid
                a = np.frombuffer(z.read(f"{root}/data/{key}"), dtype=_NP_STORAGE[storage])
                if len(a) != numel:
                    raise ValueError("storage size mismatch")
                return a

        sd = Restricted(io.BytesIO(z.read(f"{root}/data.pkl"))).load()
    if not isinstance(sd, dict) or not all(isinstance(v, np.ndarray) for v in sd.values()):
        raise ValueError("not a state dict of tensors")
    return sd


# -- the Encoder -------------------------------------------------------------------------------
class Word2VecEncoder(Encoder):
    """One layer, the type vector: the same vector for a word in every context. Unknown words get zeros."""

    kind = "word2vec"

    def __init__(self, name: str, config: dict, summary: dict, kv: KeyedVectors, path: Path | None = None):
        super().__init__(name, config, summary, path)
        self.keyed_vectors = kv

    @classmethod
    def from_checkpoint(cls, path) -> "Word2VecEncoder":
        d = checkpoint.resolve(path)
        fix = checkpoint.rebuild_command("word2vec")
        try:  # fast path without torch (importing it takes seconds): `python -m ctxlib embed` starts quickly
            cfg = checkpoint.read_config(d)
            vocab_json = json.loads((d / "vocab.json").read_text(encoding="utf-8"))
            vec = read_state_numpy(d / "model.pt")["in_vectors"]
        except Exception:  # anything unusual: the torch loader, whose errors name the file and the fix
            cfg, vocab_json, sd = checkpoint.load(d)
            vec = sd["in_vectors"].numpy() if "in_vectors" in sd else None
        try:
            vocab = Vocab.from_json(vocab_json)
            if vec is None:
                raise KeyError("no 'in_vectors' tensor")
        except (KeyError, TypeError, ValueError) as e:
            raise checkpoint.CheckpointError(
                f"{d / 'model.pt'} or {d / 'vocab.json'} is not a word2vec checkpoint ({e}). Rebuild with: {fix}"
            ) from e
        dim = int(cfg["config"].get("dim", -1))
        if tuple(vec.shape) != (len(vocab), dim):
            raise checkpoint.CheckpointError(
                f"{d / 'model.pt'} holds vectors {tuple(vec.shape)}, but {d / 'config.json'} and "
                f"vocab.json say ({len(vocab)}, {dim}). Rebuild with: {fix}"
            )
        kv = KeyedVectors(vocab.itos, vec.astype(np.float32), vocab.counts)
        return cls(d.name, cfg["config"], cfg.get("summary", {}), kv, d)

    @property
    def layer_names(self) -> list[str]:
        return [LAYER_NAME]

    def _lookup(self, token: str) -> int | None:
        from ..tokens import norm_token

        i = self.keyed_vectors.key_to_index.get(token)
        if i is None:
            i = self.keyed_vectors.key_to_index.get(norm_token(token))
        return i

    def in_vocab(self, word: str) -> bool:
        return self._lookup(word) is not None

    def encode_tokens(self, batch: list[list[Token]], texts: list[str]) -> list[Encoded]:
        out = []
        for toks, text in zip(batch, texts):
            idx = [self._lookup(t) for t, _, _ in toks]
            layer = np.zeros((len(toks), self.keyed_vectors.vector_size), np.float32)  # (T, D)
            hit = [k for k, i in enumerate(idx) if i is not None]
            if hit:
                layer[hit] = self.keyed_vectors.vectors[[idx[k] for k in hit]]
            out.append(
                Encoded(
                    text,
                    [t for t, _, _ in toks],
                    [(a, b) for _, a, b in toks],
                    layer[None],
                    self.layer_names,
                    None,
                    False,
                    [i is not None for i in idx],
                )
            )
        return out

    def word_vectors_with_tokens(self, texts: list[str], word: str, occurrence: int = 0):
        """The type vector repeated for each text; no segmentation needed, since the context cannot matter."""
        for i, t in enumerate(texts):
            if not find_all(t[:MAX_CHARS], word):
                raise WordNotFound(word, i, t)
        i = self._lookup(word)
        v = self.keyed_vectors.vectors[i] if i is not None else np.zeros(self.keyed_vectors.vector_size, np.float32)
        return np.repeat(v[None, None, :], len(texts), axis=0).astype(np.float32), [[word] for _ in texts]

    def vocab_words(self, max_words: int = 10000) -> list[str]:
        return self.keyed_vectors.index_to_key[:max_words]

    def type_matrix(self, max_words: int = 10000) -> tuple[list[str], np.ndarray]:
        """The normalised embedding table as (words, (n, 1, dim)): no encoding needed."""
        return self.keyed_vectors.index_to_key[:max_words], self.keyed_vectors.get_normed_vectors()[:max_words, None, :]

    def type_vectors(self, layer: int = 0, max_words: int = 10000) -> tuple[list[str], np.ndarray]:
        if layer != 0:
            raise IndexError(f"word2vec has one layer (0), asked for {layer}")
        return self.keyed_vectors.index_to_key[:max_words], self.keyed_vectors.get_normed_vectors()[:max_words]

"""Stand-in encoders for the app tests: contextual, deterministic, instant (no checkpoint needed).

`install(monkeypatch, names)` makes ctxlib.ui load these instead of checkpoints, so the pages are
exercised with three models whatever is in checkpoints/.
"""
from __future__ import annotations

import hashlib

import numpy as np

from ctxlib import checkpoint
from ctxlib.encoder import Encoded, Encoder
from ctxlib.tokens import char_tokens

VOCAB = "苹果 手机 好吃 水果 公司 电脑 活动 学校 参加 运动 的 了 是 很 我 他 吃 买 用 新 东西 发展 经济".split()


def _vec(tok: str, dim: int) -> np.ndarray:
    seed = int(hashlib.md5(tok.encode("utf-8")).hexdigest()[:8], 16)
    return np.random.default_rng(seed).standard_normal(dim).astype(np.float32)


class FakeEncoder(Encoder):
    """Layer 0: a fixed vector per token; layer j: mixes in more of the sentence mean (so tokens move with context)."""

    def __init__(self, kind: str, n_layers: int, dim: int = 16, chars: bool = False, vocab=VOCAB):
        super().__init__(kind, {"dim": dim}, {"steps": 10, "tokens_seen": 1000, "device": "cpu", "wall_s": 1.0})
        self.kind, self._n, self._dim, self.word_level, self._vocab = kind, n_layers, dim, not chars, list(vocab)

    @property
    def layer_names(self):
        return ["type vector"] if self._n == 1 else ["embeddings"] + [f"layer {j}" for j in range(1, self._n)]

    def _tokenize(self, text, target):
        return char_tokens(text) if not self.word_level else super()._tokenize(text, target)

    def in_vocab(self, word):
        return self._n > 1 or word in self._vocab

    def vocab_words(self, max_words=10000):
        return self._vocab[:max_words]

    def _encode_tokens(self, batch, texts):
        out = []
        for toks, text in zip(batch, texts):
            base = np.stack([_vec(w, self._dim) if (self._n > 1 or w in self._vocab) else np.zeros(self._dim, np.float32)
                             for w, _, _ in toks]) if toks else np.zeros((0, self._dim), np.float32)
            ctx = base.mean(0, keepdims=True) if len(base) else base
            layers = np.stack([base + 0.8 * j * ctx for j in range(self._n)]).astype(np.float32)  # (L, T, D)
            out.append(Encoded(text, [w for w, _, _ in toks], [(a, b) for _, a, b in toks], layers, self.layer_names))
        return out


def fakes() -> dict[str, FakeEncoder]:
    return {"word2vec": FakeEncoder("word2vec", 1), "elmo": FakeEncoder("elmo", 3), "bert": FakeEncoder("bert", 4, chars=True)}


def install(monkeypatch, names=("word2vec", "elmo", "bert")):
    """Serve fakes for `names` from ctxlib.app.loaders.load_encoder; other models look missing."""
    import streamlit as st

    from ctxlib.app import loaders

    encs = fakes()

    def load(name):
        if name in names:
            return encs[name]
        raise checkpoint.CheckpointError(f"No checkpoint at checkpoints/{name}. Build one with: {checkpoint.rebuild_command(name)}")

    monkeypatch.setattr(loaders, "load_encoder", load)
    st.cache_data.clear()
    return encs

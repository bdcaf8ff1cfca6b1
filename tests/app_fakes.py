"""Stand-in encoders for the app tests: contextual, deterministic, instant (no checkpoint needed).

`install(monkeypatch, names)` makes ctxlib.app.loaders load these instead of checkpoints, so the pages are
exercised with three models whatever is in checkpoints/.
"""

from __future__ import annotations

import hashlib

import numpy as np

from ctxlib import checkpoint
from ctxlib.encoder import Encoded, Encoder
from ctxlib.tokens import char_tokens

VOCAB = "苹果 手机 好吃 水果 公司 电脑 活动 学校 参加 运动 的 了 是 很 我 他 吃 买 用 新 东西 发展 经济".split()
UNK_CHARS = "龘靐"  # characters the character models (BERT, GPT) never saw: [UNK]


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

    def tokenize(self, text, target):
        return char_tokens(text) if not self.word_level else super().tokenize(text, target)

    def in_vocab(self, word):
        return self._n > 1 or word in self._vocab

    def vocab_words(self, max_words=10000):
        return self._vocab[:max_words]

    def encode_tokens(self, batch, texts):
        out = []
        for toks, text in zip(batch, texts):
            base = (
                np.stack(
                    [
                        _vec(w, self._dim) if (self._n > 1 or w in self._vocab) else np.zeros(self._dim, np.float32)
                        for w, _, _ in toks
                    ]
                )
                if toks
                else np.zeros((0, self._dim), np.float32)
            )
            ctx = base.mean(0, keepdims=True) if len(base) else base
            layers = np.stack([base + 0.8 * j * ctx for j in range(self._n)]).astype(np.float32)  # (L, T, D)
            known = [w in self._vocab if self.word_level else w not in UNK_CHARS for w, _, _ in toks]
            out.append(
                Encoded(
                    text, [w for w, _, _ in toks], [(a, b) for _, a, b in toks], layers, self.layer_names, known=known
                )
            )
        return out


class FakeGpt(FakeEncoder):
    """A stand-in left-to-right model: layer j of token i mixes in the mean of tokens 0..i only (causal), uniform
    causal attention (exactly 0 above the diagonal), and deterministic next-character candidates."""

    def __init__(self, n_layers: int = 5, dim: int = 16):
        super().__init__("gpt", n_layers, dim, chars=True)
        self.summary["run"] = {"sources": "pd+reviews+supplement (train split)", "corpus": None}
        self.last_settings: dict = {}

    def encode_tokens(self, batch, texts):
        out = []
        for toks, text in zip(batch, texts):
            toks = [("[CLS]", 0, 0)] + list(toks)
            base = np.stack([_vec(w, self._dim) for w, _, _ in toks])
            prefix = np.cumsum(base, 0) / np.arange(1, len(base) + 1)[:, None]
            layers = np.stack([base + 0.8 * j * prefix for j in range(self._n)]).astype(np.float32)
            T = len(toks)
            att = np.tril(np.ones((T, T), np.float32)) / np.arange(1, T + 1, dtype=np.float32)[:, None]
            atts = np.broadcast_to(att, (self._n - 1, 2, T, T)).copy()
            out.append(
                Encoded(
                    text,
                    [w for w, _, _ in toks],
                    [(a, b) for _, a, b in toks],
                    layers,
                    self.layer_names,
                    attentions=atts,
                    known=[w == "[CLS]" or w not in UNK_CHARS for w, _, _ in toks],
                )
            )
        return out

    def next_char(self, text: str, topk: int = 5) -> list[tuple[str, float]]:
        seed = int(hashlib.md5(text.encode("utf-8")).hexdigest()[:8], 16)
        chars = np.random.default_rng(seed).choice(list("的了是很我他吃买用新好手机果苹"), size=topk, replace=False)
        probs = np.linspace(0.4, 0.05, topk)
        return [(str(c), float(p)) for c, p in zip(chars, probs)]

    def char_rank(self, text: str, char: str) -> dict:
        cands = self.next_char(text, 15)  # every character of the fake's alphabet, most likely first
        ranks = {c: (r + 1, p) for r, (c, p) in enumerate(cands)}
        rank, p = ranks.get(char, (None, None))
        return {"token": char, "rank": rank, "prob": p}

    def generate(
        self, prompt: str, max_new: int = 50, temperature: float = 0.8, top_k: int = 20, seed: int = 0, **settings
    ) -> dict:
        """`settings` (repetition_penalty, no_repeat_ngram, banned_names) are kept in `last_settings`, not applied."""
        self.last_settings = settings
        if not (prompt or "").strip():
            raise ValueError("the prompt is empty; write the beginning of a sentence, e.g. 今天天气")
        text, steps = prompt, []
        rng = np.random.default_rng(seed)
        for _ in range(max_new):
            cands = self.next_char(text)
            k = int(rng.integers(len(cands)))
            steps.append({"char": cands[k][0], "prob": cands[k][1], "sample_prob": cands[k][1], "candidates": cands})
            text += cands[k][0]
        return {"prompt": prompt, "text": text, "generated": text[len(prompt) :], "steps": steps}


def fakes() -> dict[str, FakeEncoder]:
    return {
        "word2vec": FakeEncoder("word2vec", 1),
        "elmo": FakeEncoder("elmo", 3),
        "bert": FakeEncoder("bert", 4, chars=True),
        "gpt": FakeGpt(),
    }


def install(monkeypatch, names=("word2vec", "elmo", "bert", "gpt")):
    """Serve fakes for `names` from ctxlib.app.loaders.load_encoder; other models look missing."""
    import streamlit as st

    from ctxlib.app import loaders, memo

    encs = fakes()

    def load(name):
        if name in names:
            return encs[name]
        raise checkpoint.CheckpointError(
            f"No checkpoint at checkpoints/{name}. Build one with: {checkpoint.rebuild_command(name)}"
        )

    monkeypatch.setattr(loaders, "load_encoder", load)
    st.cache_data.clear()
    memo.clear_all()
    return encs

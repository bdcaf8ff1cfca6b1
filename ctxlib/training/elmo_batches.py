"""ELMo's sentence batches: endless, resumable iterables of featurized batches of similar-length sentences
(`BucketBatches` over sentences in memory, `StreamBatches` over a user's corpus streamed from disk), and
`chunk_sentences`, which cuts sentences to the model's length. Used by training/elmo.py's `train()`.
"""

from __future__ import annotations

import random

from ..models.elmo import Featurizer
from .resume import ResumableBatches


def chunk_sentences(sents: list[list[str]], max_len: int) -> list[list[str]]:
    out = []
    for s in sents:
        for i in range(0, len(s), max_len):
            if s[i : i + max_len]:
                out.append(s[i : i + max_len])
    return out


class BucketBatches(ResumableBatches):
    """Endless batches of similar-length sentences (about `batch_tokens` words each), reshuffled every epoch.

    Data parallel: every rank shuffles the groups alike and takes every `world`-th one. `state_dict()` /
    `load_state_dict()` give the position after the last batch handed out (for resuming a run)."""

    def __init__(self, sents, feat: Featurizer, batch_tokens: int, seed: int = 0, rank: int = 0, world: int = 1):
        order = sorted(range(len(sents)), key=lambda i: len(sents[i]))
        self.groups, cur, width = [], [], 0
        for i in order:
            width = max(width, len(sents[i]) + 2)
            if cur and width * (len(cur) + 1) > batch_tokens:
                self.groups.append(cur)
                cur, width = [], len(sents[i]) + 2
            cur.append(i)
        if cur:
            self.groups.append(cur)
        self.sents, self.featurizer, self.rng = sents, feat, random.Random(seed)
        self.rank, self.world = rank, world
        self.epoch = 0

    def __iter__(self):
        start, self._start = self._start, None
        if start is not None:
            self.epoch = int(start["epoch"])
            self.rng.setstate(_as_tuple(start["rng"]))
        while True:
            rng_state = self.rng.getstate()
            g = list(self.groups)
            self.rng.shuffle(g)
            skip = int(start["done"]) if start is not None else 0
            start = None
            for n, grp in enumerate(g[self.rank :: self.world]):
                if n < skip:
                    continue
                self._pos = {"epoch": self.epoch, "rng": rng_state, "done": n + 1}
                yield self.featurizer.batch([self.sents[i] for i in grp])
            self.epoch += 1


class StreamBatches(ResumableBatches):
    """BucketBatches over a user's corpus streamed from disk: this rank reads every `world`-th non-empty line,
    `buffer` lines at a time (jieba words, cut to `max_len`), groups the buffer's sentences by length and
    shuffles the groups; the stream starts again for each epoch. The position (epoch, first line of the buffer,
    generator state, batches done) makes a resumed run continue exactly."""

    def __init__(
        self,
        files,
        feat: Featurizer,
        batch_tokens: int,
        max_len: int,
        seed: int = 0,
        rank: int = 0,
        world: int = 1,
        buffer: int = 50000,
    ):
        self.files, self.featurizer, self.batch_tokens, self.max_len = files, feat, batch_tokens, max_len
        self.rank, self.world, self.buffer = rank, world, buffer
        self.rng = random.Random(seed)
        self.epoch = 0

    def _buffers(self, first_line: int):
        from ..user_text import buffered_shard, user_paragraph

        return buffered_shard(
            self.files,
            self.rank,
            self.world,
            first_line,
            self.buffer,
            lambda line, j: chunk_sentences([user_paragraph(line, j).words], self.max_len),
        )

    def __iter__(self):
        start, self._start = self._start, None
        if start is not None:
            self.epoch = int(start["epoch"])
        while True:
            produced = start is not None
            for buf_start, sents in self._buffers(int(start["line"]) if start is not None else 0):
                if start is not None:
                    self.rng.setstate(_as_tuple(start["rng"]))
                rng_state = self.rng.getstate()
                groups = BucketBatches(sents, self.featurizer, self.batch_tokens).groups
                self.rng.shuffle(groups)
                skip = int(start["done"]) if start is not None else 0
                start = None
                for n, grp in enumerate(groups):
                    if n >= skip:
                        self._pos = {"epoch": self.epoch, "line": buf_start, "rng": rng_state, "done": n + 1}
                        produced = True
                        yield self.featurizer.batch([sents[i] for i in grp])
            if not produced:
                raise ValueError("the corpus gives this process no sentences; use a bigger corpus")
            start = None
            self.epoch += 1


def _as_tuple(x):
    """random.Random states come back from torch.load as lists; setstate wants tuples."""
    return tuple(_as_tuple(v) for v in x) if isinstance(x, (list, tuple)) else x

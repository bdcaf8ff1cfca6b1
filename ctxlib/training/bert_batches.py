"""BERT pre-training batches: endless, resumable iterables of collated examples (bert_data.make_example, collate).
`PretrainBatches` visits every document of a prepared corpus once per epoch as the A side, in length-grouped
chunks, sharded per rank; `StreamPretrainBatches` reads a user's corpus file in buffers without loading it whole.
"""

from __future__ import annotations

import numpy as np

from .bert_data import Documents, collate, make_example
from .resume import ResumableBatches


def _chunk_batches(
    docs: Documents,
    order,
    rng: np.random.Generator,
    bs: int,
    pool: int,
    max_len: int,
    whole_word: bool | float,
    start: dict | None = None,
):
    """Batches over `order` (document indices), made `pool` batches at a time and grouped by length.
    Yields (position, batch); position = {"chunk", "rng", "done"} restarts exactly there (via `start`)."""
    step = bs * pool
    k0 = int(start["chunk"]) if start is not None else 0
    for k in range(k0, len(order) - bs + 1, step):
        skip = 0
        if start is not None:
            rng.bit_generator.state = start["rng"]
            skip, start = int(start["done"]), None
        rng_state = rng.bit_generator.state
        chunk = order[k : k + step]
        chunk = chunk[: len(chunk) - len(chunk) % bs]
        ex = [make_example(rng, docs.tokenizer, docs, whole_word, max_len, doc_index=int(j)) for j in chunk]
        ex.sort(key=lambda e: len(e["ids"]))
        groups = [ex[i : i + bs] for i in range(0, len(ex), bs)]
        for n, g in enumerate(rng.permutation(len(groups))):
            if n >= skip:
                yield {"chunk": k, "rng": rng_state, "done": n + 1}, collate(groups[g], docs.tokenizer.pad_id)


class PretrainBatches(ResumableBatches):
    """An endless iterable of collated batches; each epoch visits every document once as the A side,
    in a new order and with new masks and pairs. Examples are made `pool` batches at a time and
    grouped by length, so a batch holds similar lengths and little compute goes to [PAD]
    (documents are short: without this about 40% of a batch is padding).

    Data parallel: every rank draws the same epoch permutation and takes every `world`-th document
    from it (its shard, reshuffled each epoch); masks and pairs come from a per-rank generator.
    `state_dict()` / `load_state_dict()` give the position after the last batch handed out, so a
    resumed run continues with exactly the batches an uninterrupted one would have seen."""

    def __init__(
        self,
        docs: Documents,
        batch_size: int,
        max_len: int,
        seed: int = 0,
        whole_word: bool | float = False,
        pool: int = 16,
        rank: int = 0,
        world: int = 1,
    ):
        if not 0 <= rank < world:
            raise ValueError(f"rank {rank} outside world size {world}")
        self.docs, self.batch_size, self.max_len, self.whole_word = docs, batch_size, max_len, whole_word
        self.pool = max(1, pool)
        self.rank, self.world = rank, world
        self.order_rng = np.random.default_rng([seed, 7919])  # the same on every rank
        self.rng = np.random.default_rng([seed, rank])  # masks and pairs, per rank
        self.epoch = 0

    def __iter__(self):
        start, self._start = self._start, None
        if start is not None:
            self.epoch = int(start["epoch"])
            self.order_rng.bit_generator.state = start["order_rng"]
        while True:
            order_state = self.order_rng.bit_generator.state
            order = self.order_rng.permutation(self.docs.a_docs)[self.rank :: self.world]  # this rank's shard
            for pos, batch in _chunk_batches(
                self.docs, order, self.rng, self.batch_size, self.pool, self.max_len, self.whole_word, start
            ):
                self._pos = {"epoch": self.epoch, "order_rng": order_state, **pos}
                yield batch
            start = None
            self.epoch += 1


class StreamPretrainBatches(ResumableBatches):
    """PretrainBatches over a user's corpus streamed from disk (`user_text.user_files`): this rank reads every
    `world`-th non-empty line, `buffer` documents at a time; examples are made within the buffer (a NotNext B
    comes from another buffered document) and the stream starts again for each epoch, so memory holds one
    buffer, never the corpus. The position (epoch, first line of the buffer, generator states, batches done)
    makes a resumed run continue exactly."""

    def __init__(
        self,
        files,
        tokenizer,
        batch_size: int,
        max_len: int,
        seed: int = 0,
        whole_word: bool | float = False,
        pool: int = 16,
        rank: int = 0,
        world: int = 1,
        buffer: int = 20000,
    ):
        if buffer < 2 * batch_size:
            raise ValueError("buffer must hold at least two batches of documents")
        self.files, self.tokenizer, self.batch_size, self.max_len = files, tokenizer, batch_size, max_len
        self.whole_word, self.pool, self.rank, self.world, self.buffer = whole_word, max(1, pool), rank, world, buffer
        self.rng = np.random.default_rng([seed, rank])
        self.epoch = 0

    def _buffers(self, first_line: int):
        from ..user_text import buffered_shard, user_paragraph

        return buffered_shard(
            self.files,
            self.rank,
            self.world,
            first_line,
            self.buffer,
            lambda line, j: [user_paragraph(line, j, words=self.whole_word)],
            min_last=2,
        )

    def __iter__(self):
        start, self._start = self._start, None
        if start is not None:
            self.epoch = int(start["epoch"])
        while True:
            produced = start is not None  # a resumed epoch may have nothing left in it
            for buf_start, buf in self._buffers(int(start["line"]) if start is not None else 0):
                if start is not None:
                    self.rng.bit_generator.state = start["buffer_rng"]
                buf_rng = self.rng.bit_generator.state
                docs = Documents(buf, self.tokenizer)
                order = self.rng.permutation(docs.a_docs)
                for pos, batch in _chunk_batches(
                    docs, order, self.rng, self.batch_size, self.pool, self.max_len, self.whole_word, start
                ):
                    self._pos = {"epoch": self.epoch, "line": buf_start, "buffer_rng": buf_rng, **pos}
                    produced = True
                    yield batch
                start = None
            if not produced:
                raise ValueError(
                    f"the corpus gives this process fewer than {self.batch_size} documents per pass; "
                    f"use a bigger corpus or a smaller batch"
                )
            start = None
            self.epoch += 1

"""The rules GPT's sampling follows besides temperature and top-k (ctxlib.models.gpt.GptEncoder.generate), kept free of
torch so the command line can read the defaults without loading it: the classroom defaults, the no-repeat n-gram ban
(as in Hugging Face's `no_repeat_ngram_size`), and the check of every setting.
"""

from __future__ import annotations

import numbers

REPETITION_PENALTY = 1.3  # classroom default (CTRL's 1.2 still loops in this small model; 1.0 = off)
NO_REPEAT_NGRAM = 3  # classroom default: no 3-character sequence twice (0 = off)


def ngram_bans(ids, n: int) -> set[int]:
    """The token ids that would complete an `n`-gram already present in `ids` (the text so far): the tokens that
    followed each earlier occurrence of the last n - 1 ids. n = 0 bans nothing; n = 1 bans every id seen."""
    ids = [int(i) for i in ids]
    if n <= 0 or len(ids) < n - 1:
        return set()
    prefix = ids[len(ids) - n + 1 :] if n > 1 else []
    return {ids[i + n - 1] for i in range(len(ids) - n + 1) if ids[i : i + n - 1] == prefix}


def check_generation(
    temperature: float, top_k: int, max_new: int, repetition_penalty: float, no_repeat_ngram: int
) -> None:
    """ValueError (one line, naming the setting) for a generation setting out of range."""
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    if top_k < 1:
        raise ValueError(f"top_k must be at least 1, got {top_k}")
    if max_new < 1:
        raise ValueError(f"max_new must be at least 1, got {max_new}")
    if not 0 < repetition_penalty <= 100:  # NaN fails too
        raise ValueError(f"repetition_penalty must be > 0 and at most 100 (1.0 = off), got {repetition_penalty}")
    if (
        not isinstance(no_repeat_ngram, numbers.Integral)
        or isinstance(no_repeat_ngram, bool)
        or not 0 <= no_repeat_ngram <= 64
    ):
        raise ValueError(f"no_repeat_ngram must be a whole number from 0 (off) to 64, got {no_repeat_ngram}")

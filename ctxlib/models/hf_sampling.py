"""The sampling rules HfEncoder.generate follows besides temperature and top-k, with GptEncoder's wording: CTRL's
repetition penalty (Keskar et al. 2019, as Transformers applies it), the no-repeat n-gram ban (Transformers'
`no_repeat_ngram_size`) and the check of every setting. Both are off by default (1.0 and 0)."""
from __future__ import annotations

import numbers

import torch


def check_generation(temperature, top_k, max_new, repetition_penalty, no_repeat_ngram) -> None:
    """ValueError (one line, naming the setting) for a generation setting out of range (GptEncoder's wording)."""
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    if top_k < 1:
        raise ValueError(f"top_k must be at least 1, got {top_k}")
    if max_new < 1:
        raise ValueError(f"max_new must be at least 1, got {max_new}")
    if not 0 < repetition_penalty <= 100:  # NaN fails too
        raise ValueError(f"repetition_penalty must be > 0 and at most 100 (1.0 = off), got {repetition_penalty}")
    if not isinstance(no_repeat_ngram, numbers.Integral) or isinstance(no_repeat_ngram, bool) or not 0 <= no_repeat_ngram <= 64:
        raise ValueError(f"no_repeat_ngram must be a whole number from 0 (off) to 64, got {no_repeat_ngram}")


def penalise_repeats(logits: torch.Tensor, seen, penalty: float) -> torch.Tensor:
    """CTRL's repetition penalty (Keskar et al. 2019, as Transformers applies it): for every token id in `seen`, a
    positive logit is divided by `penalty` and a negative one multiplied by it. 1.0 returns `logits` unchanged."""
    if penalty == 1.0 or not len(seen):
        return logits
    out = logits.clone()
    j = torch.tensor(sorted({int(i) for i in seen}), dtype=torch.long)
    v = out[j]
    out[j] = torch.where(v > 0, v / penalty, v * penalty)
    return out


def ngram_bans(ids, n: int) -> set[int]:
    """Token ids that would complete an `n`-gram already present in `ids` (Transformers' no_repeat_ngram_size):
    the tokens that followed each earlier occurrence of the last n - 1 ids. n = 0 bans nothing."""
    ids = [int(i) for i in ids]
    if n <= 0 or len(ids) < n - 1:
        return set()
    prefix = ids[len(ids) - n + 1:] if n > 1 else []
    return {ids[i + n - 1] for i in range(len(ids) - n + 1) if ids[i:i + n - 1] == prefix}

"""word2vec's validation: POS agreement of nearest neighbours with People's Daily's gold tags.

ctxlib.training.word2vec re-exports both functions; the preset runs add the figure to their summary.
"""

from __future__ import annotations

import numpy as np

from ..vecmath import unit_rows


def pd_major_tags() -> tuple[dict[str, str], list[str]]:
    """Each People's Daily word's most frequent gold tag, and PD words by frequency (most frequent first)."""
    from collections import Counter, defaultdict

    from .. import corpus

    by_word: dict[str, Counter] = defaultdict(Counter)
    freq: Counter = Counter()
    for p in corpus.peoples_daily():
        for w, t in zip(p.words, p.tags):
            by_word[w][t] += 1
            freq[w] += 1
    major = {w: c.most_common(1)[0][0] for w, c in by_word.items()}
    return major, [w for w, _ in freq.most_common()]


def pos_agreement(words: list[str], vectors: np.ndarray, n_words: int = 2000, topn: int = 10, tags=None) -> dict:
    """POS agreement@topn: over the `n_words` most frequent PD words in the model, the share of each word's
    `topn` nearest neighbours (cosine, whole vocabulary) whose most frequent gold tag equals the word's own.
    Neighbours without a PD tag count as disagreeing."""
    major, by_freq = tags or pd_major_tags()
    index = {w: i for i, w in enumerate(words)}
    probe = [w for w in by_freq if w in index][:n_words]
    m = unit_rows(vectors)
    q = np.array([index[w] for w in probe])
    hits = 0
    for a in range(0, len(q), 500):
        sims = m[q[a : a + 500]] @ m.T  # (b, V)
        sims[np.arange(len(sims)), q[a : a + 500]] = -np.inf
        nn = np.argpartition(-sims, topn, axis=1)[:, :topn]  # (b, topn)
        for w, row in zip(probe[a : a + 500], nn):
            hits += sum(major.get(words[j]) == major[w] for j in row)
    return {
        "pos_agreement_at_10" if topn == 10 else f"pos_agreement_at_{topn}": round(hits / max(len(probe) * topn, 1), 4),
        "pos_words": len(probe),
    }

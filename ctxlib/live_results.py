"""What a live run shows (no Streamlit): the attention heads that form first (`head_formation`, from the run's
timeline) and what they show (`head_verdict`: formed, faded or forming), and a live word2vec's nearest words. The
runs themselves are in ctxlib.live.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .live import EXAMPLE_WORDS


def head_formation(rp) -> dict | None:
    """The attention heads that form first, from a replay.Replay: for the previous- and the next-character share
    (viz.attention_stats.head_summaries, averaged over the timeline's fixed sentences) the head with the largest share at
    the last snapshot, as {"prev"/"next": {"layer", "head" (from 1), "shares": [one per snapshot]}}; GPT's causal
    attention has no next-character share. None when the timeline holds no attention (ELMo)."""
    from . import replay

    n = len(replay.attention_sentences(rp))
    if n == 0:
        return None
    per = [replay.head_shares(rp, i) for i in range(n)]
    out = {}
    for m in ("prev",) if rp.kind == "gpt" else ("prev", "next"):
        mean = np.mean([p[m] for p in per], axis=0)  # (S, L, H)
        layer, head = divmod(int(np.argmax(mean[-1])), mean.shape[2])
        out[m] = {"layer": layer + 1, "head": head + 1, "shares": [round(float(x), 4) for x in mean[:, layer, head]]}
    return out


FORMED_SHARE = 0.5  # a head that gives at least this share of its attention to one neighbour counts as formed


def head_verdict(hf: dict, formed: float = FORMED_SHARE) -> dict:
    """What a run's neighbour heads show, from `head_formation`: the neighbour ("prev" or "next") whose head ends with
    the larger share, as {"which", "layer", "head", "start" (share at step 0), "end" (at the last snapshot), "peak"
    (highest), "first" (index of the first snapshot at or above `formed`, or None), "state"}: "formed" (it ends at
    or above `formed`), "faded" (it got there, then fell below) or "forming" (it never got there)."""
    which = max(hf, key=lambda m: hf[m]["shares"][-1])
    sh = hf[which]["shares"]
    first = next((i for i, x in enumerate(sh) if x >= formed), None)
    state = "formed" if sh[-1] >= formed else ("faded" if first is not None else "forming")
    return {
        "which": which,
        "layer": hf[which]["layer"],
        "head": hf[which]["head"],
        "start": sh[0],
        "end": sh[-1],
        "peak": max(sh),
        "first": first,
        "state": state,
    }


def nearest_words(folder: Path, words=EXAMPLE_WORDS, topn: int = 5) -> dict[str, list[tuple[str, float]]]:
    """word2vec: each word's `topn` nearest words in the run's model (words it does not know are left out)."""
    import ctxlib

    kv = ctxlib.load(folder).keyed_vectors
    return {w: [(x, round(float(s), 3)) for x, s in kv.most_similar(w, topn=topn)] for w in words if w in kv}

"""Notes that read a measured figure for the class: the atlas's tag legend and how well a layer separates the tags,
and why a teacher's own labelled sentences may sit at chance (with the word's counts in the training corpus)."""

from __future__ import annotations

import streamlit as st

from ctxlib import explore

from .i18n import catalogue, escape_md, lang, msg


@st.cache_data(show_spinner=False, max_entries=64)
def word_counts(word: str) -> list[dict]:
    """corpus.word_table(word), cached: the word's occurrences per source and split (supplement: per sense)."""
    from ctxlib import corpus

    return corpus.word_table(word)


def tag_name(tag: str) -> str:
    """The PKU (People's Daily) tag's meaning in the session's language; "—" for a tag the legend does not know."""
    key = f"atlas.tags.{tag}"
    return msg(key) if key in catalogue(lang()) or key in catalogue("en") else "—"


def tag_legend(cats: list[str]) -> None:
    """A small table of the tags on the map (most frequent first): code, meaning, occurrences in the sample."""
    from collections import Counter

    cols = [msg(f"atlas.legend.{c}") for c in ("tag", "meaning", "count")]
    rows = [dict(zip(cols, (t, tag_name(t), n))) for t, n in Counter(cats).most_common()]
    with st.expander(msg("atlas.legend.header"), expanded=True):
        st.caption(msg("atlas.legend.caption"))
        st.dataframe(rows, hide_index=True)


def tag_accuracy_note(word: str, acc: float, majority: float, counts: dict[str, int]) -> None:
    """How well this layer separates the word's tags (explore.atlas_tag_accuracy), against always guessing the
    commonest tag; a warning with causes and a fix when it does no better."""
    shown = msg("common.list_sep").join(f"{t} {n}" for t, n in counts.items())
    st.caption(msg("atlas.accuracy.note", acc=acc, majority=majority, counts=shown))
    if explore.at_chance([acc], majority):
        smallest = min(counts.items(), key=lambda kv: kv[1])
        st.warning(
            escape_md(
                msg("atlas.accuracy.at_chance", word=word, acc=acc, majority=majority, tag=smallest[0], n=smallest[1])
            )
        )


def chance_note(word: str, labels: list, res: dict, chance: float) -> None:
    """Type vs token: when every contextual model stays at the majority rate on every layer, say so, name the likely
    causes (too few sentences for a label; a sense the training corpus lacks, with the word's counts) and a fix.
    `res`: {model: (layer names, accuracy per layer)}; one-layer models (word2vec: one vector per type) are at chance
    by construction and are left out of the test."""
    contextual = {m: accs for m, (names, accs) in res.items() if len(names) > 1}
    if not contextual or not all(explore.at_chance(a, chance) for a in contextual.values()):
        return
    d = explore.chance_diagnosis(labels, word_counts(word))
    causes = [msg("type_token.chance.header", chance=chance)]
    if d["few"]:
        causes.append(
            msg("type_token.chance.few", label=d["smallest"][0], n=d["smallest"][1], need=explore.FEW_PER_LABEL)
        )
    senses = msg("common.list_sep").join(f"{s} {n}" for s, n in d["senses"].items()) or msg(
        "type_token.chance.no_senses"
    )
    causes.append(
        msg(
            "type_token.chance.corpus",
            word=word,
            pd=d["corpus"].get("pd", 0),
            reviews=d["corpus"].get("reviews", 0),
            senses=senses,
        )
    )
    causes.append(msg("type_token.chance.fix_rare" if d["rare"] else "type_token.chance.fix"))
    st.warning(escape_md("\n\n".join(causes)))


_LIBRARY_ERRORS = (  # (pattern of a library ValueError's text, catalogue id; the pattern's named groups fill it)
    (r"the text is (?P<n>\d+) tokens long; fill-mask takes at most (?P<cap>\d+)", "errors.too_long"),
    (r"the text has no \[MASK\]", "errors.no_mask"),
    (r"the text has no tokens", "errors.no_tokens"),
    (r"no character of the prompt .* is in the model's vocabulary", "errors.no_known_char"),
    (r"the prompt is empty", "errors.empty"),
)


def error_text(e: Exception) -> str:
    """A library exception as a message in the session's language: the errors a user's input can cause map to the
    catalogue (errors.toml); anything else is named as an internal error, its own text kept for a bug report."""
    import re

    from ctxlib.encoder import OutOfVocabulary, WordNotFound

    if isinstance(e, WordNotFound):
        return msg("errors.word_not_found", word=e.word, n=e.index + 1)
    if isinstance(e, OutOfVocabulary):
        return msg("errors.oov", word=e.word, model=e.model)
    if isinstance(e, ValueError):
        for pattern, msg_id in _LIBRARY_ERRORS:
            if m := re.search(pattern, str(e)):
                return msg(msg_id, **m.groupdict())
    return msg("errors.other", kind=type(e).__name__, error=str(e))

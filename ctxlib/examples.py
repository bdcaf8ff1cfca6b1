"""Built-in example sets: labelled sentences written for the app.

Each set shows one ambiguous word in a few senses or grammatical roles, with
balanced labels, so a class can watch the token vectors of one word type fall
apart by sense (Peters et al. 2018, ELMo; Devlin et al. 2019, BERT).

    EXAMPLE_SETS["苹果"] == {"word": "苹果", "origin": "ctxlab", "title_zh": ..., "title_en": ...,
                             "sentences": [("苹果真好吃，又甜又脆。", "水果"), ...]}

"origin": who wrote the sentences ("ctxlab": for this project; message `examples.origin.ctxlab`). `sets_for`
and `default_set` give these sets (examples_zh.py) for language "zh" and the English ones (examples_en.py) for "en".

The word's first occurrence in every sentence is the one the label describes
(the app and `Encoder.word_vectors` use the first occurrence).

`parse_labelled_lines` reads the "sentence | label" format of the app's text box; `check_inputs` cleans what a
user typed and says what it changed as `Note`s: message ids (strings/<lang>/inputs.toml) and their values.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .examples_en import DEFAULT_SET_EN, EXAMPLE_SETS_EN
from .examples_zh import DEFAULT_SET, EXAMPLE_SETS

_BY_LANGUAGE = {"zh": (DEFAULT_SET, EXAMPLE_SETS), "en": (DEFAULT_SET_EN, EXAMPLE_SETS_EN)}  # of the sentences


def sets_for(language: str) -> dict[str, dict]:
    """The example sets whose sentences are in `language` ("zh" or "en"), default set first."""
    if language not in _BY_LANGUAGE:
        raise ValueError(f"example sets exist for {', '.join(_BY_LANGUAGE)}, not {language!r}")
    return _BY_LANGUAGE[language][1]


def default_set(language: str) -> str:
    """The name of the set a page opens on for `language`."""
    sets_for(language)  # an unknown language raises there
    return _BY_LANGUAGE[language][0]


_SEPARATORS = ("|", "｜")


def parse_labelled_lines(text: str) -> list[tuple[str, str | None]]:
    """Parse "sentence | label" lines; the label is optional. Blank lines are skipped.

    The last "|" (ASCII or full-width) splits sentence from label, so a sentence
    may itself contain "|". An empty label gives None.
    """
    out: list[tuple[str, str | None]] = []
    for line in (text or "").splitlines():
        line = line.strip()
        if not line:
            continue
        cut = max(line.rfind(s) for s in _SEPARATORS)
        if cut < 0:
            out.append((line, None))
            continue
        sentence, label = line[:cut].strip(), line[cut + 1 :].strip()
        out.append((sentence, label or None))
    return out


def format_labelled_lines(sentences) -> str:
    """The inverse of parse_labelled_lines: one "sentence | label" line each (no label, no bar)."""
    return "\n".join(f"{s} | {lab}" if lab else s for s, lab in sentences)


def example_text(name: str, language: str = "zh") -> str:
    """The text-box form of an example set."""
    return format_labelled_lines(sets_for(language)[name]["sentences"])


# -- checking what a user typed ----------------------------------------------------------------
MAX_INPUT_CHARS = 5000  # a longer paste is cut here
MAX_SENTENCES = 40  # more sentences make unreadable maps
MAX_SENTENCE_CHARS = 120  # a longer sentence is cut to a window around the word (BERT takes 126 characters)
MAX_WORD_CHARS = 12


@dataclass(frozen=True)
class Numbers:
    """Sentence numbers for a message; the format spec is the separator, so the catalogue writes `{nums:, }`
    in English and `{nums:、}` in Chinese. `more` adds "…" (the list was cut)."""

    items: tuple[int, ...]
    more: bool = False

    def __format__(self, sep: str) -> str:
        return (sep or ", ").join(map(str, self.items)) + ("…" if self.more else "")


@dataclass(frozen=True)
class Note:
    """A message about the user's input: `level` ("error" | "warning" | "info"), the catalogue id of its text
    (strings/<lang>/inputs.toml) and the values of its placeholders; render it with `msg(note.id, **note.values)`."""

    level: str
    id: str
    values: dict = field(default_factory=dict)


def window(sentence: str, start: int, end: int, size: int) -> str:
    half = max(0, (size - (end - start)) // 2)
    a = max(0, start - half)
    b = min(len(sentence), a + size)
    a = max(0, b - size)
    return sentence[a:b]


def check_inputs(word: str, text: str) -> tuple[str, list[tuple[str, str | None]], list[Note]]:
    """Clean a target word and "sentence | label" text: (word, kept pairs, notes).

    Never raises on bad input; an "error" note means nothing can be shown. Notes carry user text verbatim,
    so the caller must escape the rendered text before showing it as markdown.
    """
    from .tokens import find_all

    notes: list[Note] = []
    word = (word or "").strip()
    if not word:
        return word, [], [Note("error", "inputs.no_word")]
    if len(word) > MAX_WORD_CHARS or any(ch.isspace() for ch in word):
        return word, [], [Note("error", "inputs.bad_word", {"max": MAX_WORD_CHARS, "word": word[:20]})]
    text = text or ""
    if len(text) > MAX_INPUT_CHARS:
        notes.append(Note("warning", "inputs.input_cut", {"n": len(text), "max": MAX_INPUT_CHARS}))
        text = text[:MAX_INPUT_CHARS]
    pairs = parse_labelled_lines(text)
    if not pairs:
        return word, [], notes + [Note("error", "inputs.no_sentence")]
    kept, missing, cut = [], [], []
    for i, (s, lab) in enumerate(pairs, 1):
        spans = find_all(s, word)
        if not spans:
            missing.append((i, s))
            continue
        if len(s) > MAX_SENTENCE_CHARS:
            s = window(s, spans[0][0], spans[0][1], MAX_SENTENCE_CHARS)
            cut.append(i)
        kept.append((s, lab))
    if missing:
        nums = Numbers(tuple(i for i, _ in missing[:10]), more=len(missing) > 10)
        notes.append(Note("warning", "inputs.skipped", {"nums": nums, "word": word, "first": missing[0][1][:30]}))
    if cut:
        notes.append(Note("info", "inputs.windowed", {"nums": Numbers(tuple(cut[:10])), "max": MAX_SENTENCE_CHARS}))
    first: dict[str, int] = {}
    repeats = []  # (first number, repeat number): kept (its point sits on the first one), but the teacher is told
    for i, (s, _) in enumerate(pairs, 1):
        if find_all(s, word):
            if s in first:
                repeats.append((first[s], i))
            first.setdefault(s, i)
    if repeats:
        notes.append(
            Note(
                "info",
                "inputs.repeated",
                {
                    "nums": Numbers(tuple(i for _, i in repeats[:10]), len(repeats) > 10),
                    "first": Numbers(tuple(dict.fromkeys(a for a, _ in repeats[:10]))),
                },
            )
        )
    if len(kept) > MAX_SENTENCES:
        notes.append(Note("warning", "inputs.too_many", {"n": len(kept), "max": MAX_SENTENCES}))
        kept = kept[:MAX_SENTENCES]
    if not kept:
        notes.append(Note("error", "inputs.no_match", {"word": word}))
    return word, kept, notes

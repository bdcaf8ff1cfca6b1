"""Lesson files: the lecture as a sequence of prepared steps, each one live view of the shipped models.

A lesson is a JSON file a teacher can edit, reorder and share (`ctxlib/app/lessons/*.json` ship with the app):

    {"title": {"zh": "...", "en": "..."},
     "steps": [{"kind": "cosine", "title": {...}, "question": {...}, "answer": {...},
                "note": {...},                         # optional, shown under the view
                "live_answer": {...},                  # optional, finetune only: the answer once the live run is done
                "params": {"word": "苹果", "sentences": ["苹果真好吃", "苹果手机很好用"]}}]}

Every text a student sees has both languages. `load` / `parse` check the whole file and raise `LessonError` with a
code, the step's number and the values a message needs (the app translates them; `str(e)` is the English
message). `compute(step, load_model)` runs a step's view on real encoders and returns plain data for the page
(ctxlib.lesson_compute); `answer(step, data, lang)` fills the answer's placeholders ("the model's top guess is {top}")
from that data (ctxlib.lesson_facts), so an answer says what the model really does; a placeholder the view does not
compute is refused when the file is read. A fine-tuning step also runs a live job (the app's job line); once it
has finished, `live_answer(step, result, lang)` is the answer, its placeholders filled from the job's own result.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from . import kinds

LESSON_DIR = Path(__file__).resolve().parent / "app" / "lessons"
LANGS = ("zh", "en")
MAX_BYTES = 256 * 1024  # an uploaded lesson larger than this is refused
MAX_STEPS = 100
MAX_TEXT = 2000  # characters of one text (question, answer, note)
MAX_INPUT = 300  # characters of one model input (a sentence, a prompt)
TOPK = 5
ENGLISH = "@english"  # in a cosine step's models: every registered English model (CTXLAB_MODELS; lessons/english.json)
POSITIONS_MAX = 40  # characters of a positions step's sentence (ctxlib.mechanics.MAX_CHARS)

# kind -> {param: (type code, required)}; type codes: text, texts (list of 2..6 texts), int, models, model
KINDS: dict[str, dict[str, tuple[str, bool]]] = {
    "cosine": {"word": ("text", True), "sentences": ("texts", True), "models": ("models", False)},
    "fill_mask": {"text": ("text", True), "answer": ("text", False)},
    "elmo_lm": {"text": ("text", True), "word": ("text", True)},
    "elmo_mix": {},
    "mlm_example": {"seed": ("int", False)},
    "nsp": {"a": ("text", True), "b": ("text", True)},
    "attention": {"text": ("text", True), "model": ("model", False), "layer": ("int", False), "head": ("int", False)},
    "next_char": {"prompt": ("text", True), "answer": ("text", False)},
    "positions": {"text": ("text", True), "model": ("model", False)},
    "unseen_word": {"word": ("text", True), "sentence": ("text", True)},
    "taglm": {},
    "cove": {},
    "finetune": {},
}
KIND_MODELS = {
    "fill_mask": ("bert",),
    "elmo_lm": ("elmo",),
    "elmo_mix": ("elmo",),
    "mlm_example": ("bert",),
    "nsp": ("bert",),
    "next_char": ("gpt",),
    "unseen_word": ("word2vec", "elmo"),
    "taglm": ("elmo",),
    "finetune": ("bert", "elmo"),
    "cove": (),
}  # cosine: its `models`; attention: its `model`
STEP_FIELDS = {"kind": True, "title": True, "question": True, "answer": True, "note": False, "params": False}
LIVE_KINDS = ("finetune",)  # kinds whose step runs a live job; only they may have a "live_answer"

MESSAGES = {  # English text of each error code (the app's catalogue has the same ids under lesson.error.*)
    "not_utf8": "the file is not UTF-8 text (save it as UTF-8 JSON; GB18030 and binary files are not read)",
    "too_big": "the file is larger than {max_kb} KB",
    "bad_json": "the file is not valid JSON: {reason} at line {line}, column {col}",
    "not_object": 'the file must hold one JSON object with "title" and "steps"',
    "missing": 'the field "{field}" is missing',
    "wrong_type": 'the field "{field}" must be {expected}',
    "unknown_field": 'unknown field "{field}" (allowed: {allowed})',
    "unknown_kind": 'unknown view kind "{kind}" (known kinds: {kinds})',
    "no_steps": "the lesson has no steps",
    "too_many": "the lesson has more than {max} steps",
    "empty_text": 'the field "{field}" has no {lang} text',
    "too_long": 'the field "{field}" is longer than {max} characters',
    "bad_model": '"{model}" is no model of this app (models: {models})',
    "word_missing": 'the word "{word}" is not in the sentence "{sentence}"',
    "no_mask": "the text has no [MASK]; write e.g. 今天天气很[MASK]",
    "bad_number": 'the field "{field}" must be a whole number from {lo} to {hi}',
    "unknown_fact": "the answer names {{{name}}}, which this view does not compute (it computes: {facts})",
}
JSON_REASONS = {
    "value": "Expecting value",
    "comma": "Expecting ',' delimiter",
    "colon": "Expecting ':' delimiter",
    "name": "Expecting property name",
    "string": "Unterminated string",
    "extra": "Extra data",
    "control": "Invalid control character",
    "escape": "Invalid \\",
}  # json's messages, for translation
TYPE_NAMES = {
    "text": "a text",
    "texts": "a list of 2 to 6 texts",
    "int": "a whole number",
    "models": "a list of model names",
    "model": "a model name",
    "object": "an object",
    "list": "a list",
    "langs": 'an object with "zh" and "en" texts',
}


class LessonError(ValueError):
    """A lesson file that cannot be used: `code` (a key of MESSAGES), `step` (1-based, or None for the file),
    `values` for the message."""

    def __init__(self, code: str, step: int | None = None, **values):
        self.code, self.step, self.values = code, step, values
        text = MESSAGES[code].format(**{k: TYPE_NAMES.get(v, v) if k == "expected" else v for k, v in values.items()})
        super().__init__(text if step is None else f"step {step}: {text}")


@dataclass(frozen=True)
class Step:
    kind: str
    title: dict[str, str]
    question: dict[str, str]
    answer: dict[str, str]
    note: dict[str, str] | None = None
    params: dict = field(default_factory=dict)
    live_answer: dict[str, str] | None = None  # LIVE_KINDS: the answer from the finished live job's result

    def text(self, name: str, code: str) -> str:
        """The step's `name` text (title, question, answer, note, live_answer) in language `code` ("" if none)."""
        d = getattr(self, name) or {}
        return d.get(code, "")

    def models(self) -> tuple[str, ...]:
        """The models this step's view needs."""
        if self.kind == "cosine":
            return tuple(self.params.get("models") or kinds.names(shipped=True))
        if self.kind in ("attention", "positions"):
            return (self.params.get("model", "bert"),)
        return KIND_MODELS.get(self.kind, ())


@dataclass(frozen=True)
class Lesson:
    title: dict[str, str]
    steps: tuple[Step, ...]


def shipped() -> list[str]:
    """Names of the lessons shipped with the app (file stems in LESSON_DIR), `default` first."""
    names = sorted(p.stem for p in LESSON_DIR.glob("*.json"))
    return sorted(names, key=lambda n: n != "default")


def load(name_or_path: str | Path) -> Lesson:
    """A shipped lesson by name, or a lesson file by path."""
    p = Path(name_or_path)
    if not p.suffix and not p.exists():
        p = LESSON_DIR / f"{name_or_path}.json"
    return parse(p.read_bytes())


def parse(raw: bytes | str) -> Lesson:
    """Check a lesson file's bytes and return the Lesson; anything wrong raises LessonError."""
    if isinstance(raw, bytes):
        if len(raw) > MAX_BYTES:
            raise LessonError("too_big", max_kb=MAX_BYTES // 1024)
        try:
            raw = raw.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise LessonError("not_utf8") from None
    if "\x00" in raw:
        raise LessonError("not_utf8")
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as e:
        code = next((c for c, start in JSON_REASONS.items() if e.msg.startswith(start)), "other")
        raise LessonError("bad_json", reason=e.msg, reason_code=code, line=e.lineno, col=e.colno) from None
    if not isinstance(data, dict):
        raise LessonError("not_object")
    _fields(data, {"title": True, "steps": True}, None)
    title = _langs(data, "title", None)
    steps = data["steps"]
    if not isinstance(steps, list):
        raise LessonError("wrong_type", field="steps", expected="list")
    if not steps:
        raise LessonError("no_steps")
    if len(steps) > MAX_STEPS:
        raise LessonError("too_many", max=MAX_STEPS)
    return Lesson(title, tuple(_step(s, i + 1) for i, s in enumerate(steps)))


def _fields(d: dict, fields: dict[str, bool], step: int | None) -> None:
    for k in d:
        if k not in fields:
            raise LessonError("unknown_field", step, field=k, allowed=", ".join(fields) or "-")
    for k, required in fields.items():
        if required and k not in d:
            raise LessonError("missing", step, field=k)


def _langs(d: dict, name: str, step: int | None) -> dict[str, str]:
    v = d[name]
    if not isinstance(v, dict) or set(v) - set(LANGS) or not all(isinstance(v.get(c), str) for c in LANGS):
        raise LessonError("wrong_type", step, field=name, expected="langs")
    for c in LANGS:
        if not v[c].strip():
            raise LessonError("empty_text", step, field=name, lang=c)
        if len(v[c]) > MAX_TEXT:
            raise LessonError("too_long", step, field=name, max=MAX_TEXT)
    return {c: v[c] for c in LANGS}


def _step(s, n: int) -> Step:
    if not isinstance(s, dict):
        raise LessonError("wrong_type", n, field=f"steps[{n}]", expected="object")
    kind = s.get("kind")
    _fields(s, {**STEP_FIELDS, "live_answer": False} if kind in LIVE_KINDS else STEP_FIELDS, n)
    if not isinstance(kind, str):
        raise LessonError("wrong_type", n, field="kind", expected="text")
    if kind not in KINDS:
        raise LessonError("unknown_kind", n, kind=kind[:40], kinds=", ".join(KINDS))
    texts = {k: _langs(s, k, n) for k in ("title", "question", "answer", "note", "live_answer") if k in s}
    params = s.get("params", {})
    if not isinstance(params, dict):
        raise LessonError("wrong_type", n, field="params", expected="object")
    _fields(params, {k: req for k, (_, req) in KINDS[kind].items()}, n)
    for k, v in params.items():
        _param(k, v, KINDS[kind][k][0], n)
    _semantics(kind, params, n)
    _placeholders(kind, params, texts["answer"], n)
    if "live_answer" in texts:
        _placeholders(kind, params, texts["live_answer"], n, live=True)
    return Step(
        kind,
        texts["title"],
        texts["question"],
        texts["answer"],
        texts.get("note"),
        dict(params),
        texts.get("live_answer"),
    )


def _param(name: str, v, typ: str, n: int) -> None:
    bad = LessonError("wrong_type", n, field=name, expected=typ)
    if typ == "text":
        if not isinstance(v, str):
            raise bad
        if not v.strip():
            raise LessonError("empty_text", n, field=name, lang="-")
        if len(v) > MAX_INPUT:
            raise LessonError("too_long", n, field=name, max=MAX_INPUT)
    elif typ == "texts":
        if not isinstance(v, list) or not 2 <= len(v) <= 6 or not all(isinstance(x, str) for x in v):
            raise bad
        for x in v:
            _param(name, x, "text", n)
    elif typ == "int":
        if isinstance(v, bool) or not isinstance(v, int):
            raise bad
    elif typ in ("model", "models"):
        names = [v] if typ == "model" else v
        if not isinstance(names, list) or not names or not all(isinstance(x, str) for x in names):
            raise bad
        allowed = (
            kinds.names(shipped=True, view="attention") if typ == "model" else (*kinds.names(shipped=True), ENGLISH)
        )
        for x in names:
            if x not in allowed:
                raise LessonError("bad_model", n, model=x[:40], models=", ".join(allowed))


def _semantics(kind: str, p: dict, n: int) -> None:
    from .tokens import find_all

    if kind == "cosine":
        for s in p["sentences"]:
            if not find_all(s, p["word"]):
                raise LessonError("word_missing", n, word=p["word"], sentence=s)
    elif kind == "elmo_lm" and not find_all(p["text"], p["word"]):
        raise LessonError("word_missing", n, word=p["word"], sentence=p["text"])
    elif kind == "unseen_word" and not find_all(p["sentence"], p["word"]):
        raise LessonError("word_missing", n, word=p["word"], sentence=p["sentence"])
    elif kind == "fill_mask" and "[MASK]" not in p["text"]:
        raise LessonError("no_mask", n)
    elif kind == "positions" and len(p["text"].strip()) > POSITIONS_MAX:
        raise LessonError("too_long", n, field="text", max=POSITIONS_MAX)
    for k in ("layer", "head"):
        if k in p and not 1 <= p[k] <= 64:
            raise LessonError("bad_number", n, field=k, lo=1, hi=64)
    if "seed" in p and not 0 <= p["seed"] <= 10**9:
        raise LessonError("bad_number", n, field="seed", lo=0, hi=10**9)


def _placeholders(kind: str, params: dict, answer: dict[str, str], n: int, live: bool = False) -> None:
    """Every {name} of the answer is a fact the step's view computes (lesson_facts.names; a live answer's:
    lesson_facts.live_names, from the finished job's result)."""
    from . import lesson_facts

    allowed = lesson_facts.live_names(kind) if live else lesson_facts.names(kind, params)
    for code in LANGS:
        for name in lesson_facts.used(answer[code]):
            if name not in allowed:
                raise LessonError("unknown_fact", n, name=name[:40], facts=", ".join(allowed) or "-")


# -- the live views (ctxlib.lesson_compute) and the facts an answer names (ctxlib.lesson_facts) -------------------
def answer(step: Step, data: dict | None, code: str, words: dict[str, str] | None = None, escape=str) -> str:
    """The step's answer in language `code`, its placeholders filled from the model's output `data` (None: not
    computed, every placeholder shows lesson_facts.MISSING); `escape` is applied to each filled value (Markdown)."""
    from . import lesson_facts

    facts = lesson_facts.facts(step, data, words) if data else {}
    return lesson_facts.fill(step.text("answer", code), {k: escape(v) for k, v in facts.items()})


def live_answer(
    step: Step, result: dict, code: str, words: dict[str, str] | None = None, escape=str, default: str = ""
) -> str:
    """The answer of a LIVE_KINDS step once its live job has finished: the step's `live_answer` in language `code`
    (else `default`, the app's own text), its placeholders filled from the job's `result` (lesson_facts.live_facts)."""
    from . import lesson_facts

    facts = lesson_facts.live_facts(step.kind, result, words)
    text = step.text("live_answer", code) or default
    return lesson_facts.fill(text, {k: escape(v) for k, v in facts.items()})

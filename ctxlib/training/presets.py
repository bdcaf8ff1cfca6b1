"""`Preset`: one shape for the named training settings of every model (`PRESETS` in training.bert, training.elmo,
training.word2vec and training.gpt). A run's plan (`RunSpec.plan`) is its preset, with the step count re-planned
when asked.

- `model`: fields of the model's config (BertConfig, ElmoConfig, Word2VecConfig); those left out keep the
  config's defaults.
- `steps`, `lr`, `warmup`: the optimizer's plan (word2vec runs epochs with its own learning rate, both in `model`,
  and leaves these at 0).
- `budget_s`: a time budget in seconds; the learning-rate schedule follows whichever runs out first, steps or
  time (0 = none). `train(time_limit=...)` / `--time-limit` overrides it.
- `amp`: mixed precision ("auto", "bf16" or "off"); `train(amp=...)` / `--amp` overrides it.
- `timeline`: record a training timeline and save during training (off for the tests' tiny presets).
- `resume_file`: write resume.pt (weights, optimizer, data position) at every save, so `--resume` continues exactly;
  off for the training page's live runs, which never resume (their folder stays a loadable checkpoint).
- `data`: how the batches are made, with keys of the model's own (every preset of a model has all of them):
  - bert: batch (sequences per step), max_paragraphs (a random sample of the train split; None = all),
    min_count (of a character to enter the vocabulary), whole_word (the share of examples masked by whole words),
    optionally timeline_valid (held-out examples of the timeline's loss at each snapshot; 256 when absent, and
    fewer than 256 read only a sample of the valid split);
  - elmo: paragraphs (a random sample of the train split; 0 = all), batch_tokens (words per step), max_len
    (words per sentence chunk), bench_steps (steps of the softmax speed benchmark; 0 = none), valid_sentences
    (held-out sentences for the perplexity);
  - word2vec: sentences (an even sample of the train split; None = all).
  - gpt: batch (windows per step), max_paragraphs and min_count as bert, valid_chars (held-out characters for
    the final bits per character; None = the whole valid split).
- `name`: what the run calls its preset: the summary's "preset", the logs, the command's --preset and what --resume
  looks up again. `named(...)` sets each module's PRESETS names from their keys; an ad-hoc preset (the training
  page's live runs: "live-<id>") carries its own.

Every model's `train(preset, ...)` takes a Preset or the name of one of its module's PRESETS; `resolve` turns the
one into the other.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace


@dataclass(frozen=True)
class Preset:
    model: dict
    steps: int = 0
    lr: float = 0.0
    warmup: int = 0
    budget_s: float = 0.0
    amp: str = "auto"
    timeline: bool = True
    resume_file: bool = True
    data: dict = field(default_factory=dict)
    name: str = ""

    def replan(self, steps: int | None) -> "Preset":
        """This preset with `steps` optimizer steps planned (itself when steps is None or 0)."""
        return replace(self, steps=int(steps)) if steps else self


def named(presets: dict[str, Preset]) -> dict[str, Preset]:
    """`presets` with each one's name set to its key (a module's PRESETS)."""
    return {k: replace(p, name=k) for k, p in presets.items()}


def resolve(kind: str, preset: Preset | str) -> Preset:
    """The Preset a run of `kind` trains with: `preset` itself (it must have a name), or the one of that name in the
    kind's training module's PRESETS (ValueError naming the choices when there is none)."""
    if isinstance(preset, Preset):
        if not preset.name:
            raise ValueError('a Preset given to train() needs a name (the summary\'s "preset", what --resume looks up)')
        return preset
    from .. import kinds

    presets = kinds.training_module(kind).PRESETS
    if preset not in presets:
        raise ValueError(f"unknown preset {preset!r}; choose one of {list(presets)}")
    found = presets[preset]
    return found if found.name == preset else replace(found, name=preset)  # one added to PRESETS without its name

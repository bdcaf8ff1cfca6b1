"""Helpers shared by the AppTests of the model pages: run a page, read its charts, pick the checkpoint folder."""

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import ctxlib
from ctxlib import checkpoint
from ctxlib.app import loaders

PAGES = Path(__file__).resolve().parent.parent / "pages"


def run_page(page: str, title: str, at=None, timeout: int = 120, **qp):
    """Run pages/<page> in English with the given query parameters; no exception and exactly `title` as title."""
    at = at or AppTest.from_file(str(PAGES / page), default_timeout=timeout)
    at.query_params["lang"] = "en"
    for k, v in qp.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, at.exception
    assert [t.value for t in at.title] == [title]
    return at


def teachers_text(at) -> str:
    """The markdown in the page's "for teachers" expander (build and eval commands, checkpoint paths)."""
    return " ".join(m.value for e in at.expander if e.label in ("For teachers", "给教师") for m in e.markdown)


def chart_specs(at) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def shipped(name: str):
    """The shipped checkpoint's encoder, or a skip naming the command that builds it."""
    if not (checkpoint.CHECKPOINT_DIR / name / "config.json").is_file():
        pytest.skip(f"checkpoints/{name} missing: python -m ctxlib train {name}")
    return loaders.load_encoder(name)


def use_checkpoint_dir(monkeypatch, directory) -> None:
    """Make the app read checkpoints from `directory`, bypassing the cross-test model cache."""
    monkeypatch.setattr(checkpoint, "CHECKPOINT_DIR", directory)
    monkeypatch.setattr(loaders, "load_encoder", lambda name: ctxlib.load(name))

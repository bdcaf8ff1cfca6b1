"""No module reaches into another module's private names: no `from x import _name` of a ctxlib module, and no
`obj._name` where `_name` is defined only in other ctxlib modules (a method or function of theirs). Public batch
APIs (Encoder.tokenize/encode_tokens, run_ids, lm_pairs, batch_ids, ...) exist for that."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FILES = sorted([*ROOT.glob("ctxlib/**/*.py"), *ROOT.glob("pages/*.py"), ROOT / "app.py"])


def _defined(tree: ast.AST) -> set[str]:
    """Private names a module defines: functions, methods, classes, assigned names and attributes of self."""
    out = set()
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
        elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            out.add(n.id)
        elif isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store):
            out.add(n.attr)
        elif isinstance(n, ast.arg):
            out.add(n.arg)
    return {x for x in out if x.startswith("_") and not x.startswith("__")}


NAMEDTUPLE_API = {"_fields", "_replace", "_asdict", "_make"}  # public, despite the underscore


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__") and name not in NAMEDTUPLE_API


def violations() -> list[str]:
    trees = {f: ast.parse(f.read_text(encoding="utf-8")) for f in FILES}
    defined = {f: _defined(t) for f, t in trees.items()}
    out = []
    for f, tree in trees.items():
        rel = f.relative_to(ROOT)
        elsewhere = set().union(*(d for g, d in defined.items() if g != f)) - defined[f]
        for n in ast.walk(tree):
            if isinstance(n, ast.ImportFrom) and (n.level or (n.module or "").startswith("ctxlib")):
                out += [f"{rel}:{n.lineno} imports {a.name}" for a in n.names if _private(a.name)]
            elif (
                isinstance(n, ast.Attribute)
                and _private(n.attr)
                and n.attr in elsewhere
                and not (isinstance(n.value, ast.Name) and n.value.id in ("self", "cls"))
            ):
                out.append(f"{rel}:{n.lineno} uses .{n.attr}")
    return out


def test_no_private_names_across_modules():
    assert violations() == []


def test_the_checker_finds_a_reach_in(tmp_path, monkeypatch):
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("def _secret():\n    pass\nclass C:\n    def _m(self):\n        return self._m\n")
    b.write_text("from .a import _secret\nfrom .a import C\nC()._m()\n")
    monkeypatch.setattr(__import__(__name__), "FILES", [a, b])
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    assert violations() == ["b.py:1 imports _secret", "b.py:3 uses ._m"]

"""The string catalogue: every language has the same ids and placeholders, every id the code names exists,
and no page or library module carries interface text in the old `t(zh, en)` form."""

import re
import string
from pathlib import Path

import pytest

from ctxlib.app import i18n

ROOT = Path(__file__).resolve().parent.parent
CODE = [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py")), *sorted((ROOT / "ctxlib").rglob("*.py"))]
_ID = re.compile(r"""\bmsg\(\s*f?["']([a-z_][\w.]*)["']""")


def _fields(text: str) -> set[str]:
    return {f for _, f, _, _ in string.Formatter().parse(text) if f}


def test_languages_have_the_same_ids_and_placeholders():
    zh, en = i18n.catalogue("zh"), i18n.catalogue("en")
    assert zh and set(zh) == set(en), sorted(set(zh) ^ set(en))
    for k in en:
        assert _fields(zh[k]) == _fields(en[k]), k
    for name in {p.name for p in (i18n.STRINGS_DIR / "en" / "lecture").glob("*.md")}:
        assert (i18n.STRINGS_DIR / "zh" / "lecture" / name).is_file(), name


def test_every_id_the_code_names_exists():
    en = i18n.catalogue("en")
    named = set()
    for f in CODE:
        for m in _ID.finditer(f.read_text(encoding="utf-8")):
            if "{" not in m.group(0):  # f-string ids (msg(f"pages.{name}.label")) are checked below
                named.add((f.name, m.group(1)))
    missing = sorted((f, i) for f, i in named if i not in en)
    assert not missing, missing
    assert named  # the scan sees the pages


@pytest.mark.parametrize(
    "name", ["Type_vs_token", "Polysemy_atlas", "ELMo_layers", "BERT_attention", "BERT_pretraining", "Results"]
)
def test_page_labels_exist(name):
    assert f"pages.{name}.label" in i18n.catalogue("en")


def test_lookup_falls_back_and_fills_placeholders():
    assert i18n.lookup("home.demo.loading", "zh", model="bert") == "正在加载 bert…"
    assert i18n.lookup("no.such.id", "zh") == "no.such.id"
    assert i18n.lookup("home.demo.loading", "xx", model="bert") == "Loading bert…"


def test_no_inline_bilingual_text_left():
    """Interface text comes from the catalogue: no t("中文", "English") pairs and no lang flags in pages or library."""
    import ast

    for f in CODE:
        tree = ast.parse(f.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "t" and len(node.args) == 2:
                raise AssertionError(f"{f.name}:{node.lineno}: t(zh, en) pair")
            if isinstance(node, ast.arg) and node.arg == "lang" and "ctxlib/app" not in str(f):
                raise AssertionError(f"{f.name}:{node.lineno}: a lang parameter")

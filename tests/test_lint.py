"""The tree passes `ruff check` (the rules in pyproject.toml: pyflakes, pycodestyle, import order) and `ruff format
--check`, and every module and page keeps to its size (a module 400 lines, a page 120)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _ruff(*args):
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    if not Path(ruff).exists():
        pytest.skip("ruff is not installed (requirements.txt pins it)")
    return subprocess.run([ruff, *args, "--no-cache", "."], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_ruff_check_passes():
    out = _ruff("check")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-1000:]


def test_ruff_format_check_passes():
    out = _ruff("format", "--check")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-1000:]


@pytest.mark.parametrize("folder, limit", [("ctxlib", 400), ("pages", 120)])
def test_files_keep_to_their_size(folder, limit):
    files = [ROOT / "app.py"] if folder == "pages" else []
    files += sorted((ROOT / folder).rglob("*.py"))
    assert len(files) > 5
    over = {
        str(f.relative_to(ROOT)): n for f in files if (n := len(f.read_text(encoding="utf-8").splitlines())) > limit
    }
    assert not over, f"over {limit} lines (split before adding): {over}"

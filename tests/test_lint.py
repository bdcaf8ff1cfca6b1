"""The tree passes `ruff check` (the rules in pyproject.toml: pyflakes, pycodestyle, import order)."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_ruff_check_passes():
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    if not Path(ruff).exists():
        pytest.skip("ruff is not installed (requirements.txt pins it)")
    out = subprocess.run([ruff, "check", "--no-cache", "."], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-1000:]

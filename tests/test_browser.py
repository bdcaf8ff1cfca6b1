"""Real-browser smoke test: `streamlit run app.py`, then headless Chromium visits the home page and every page in pages/.

Skips (with the reason) when Playwright or a Chromium binary is missing, except when CTXLAB_REQUIRE_BROWSER=1
(`.ci/run` sets it and installs chromium): then a browser that cannot run fails the test. A page that says a
shipped model could not be loaded fails it too, warning or error.
"""

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from ctxlib import checkpoint, kinds

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _skip_or_fail(reason: str):
    if os.environ.get("CTXLAB_REQUIRE_BROWSER") == "1":
        pytest.fail(f"CTXLAB_REQUIRE_BROWSER=1 but {reason}")
    pytest.skip(reason)


def _chromium() -> str | None:
    for p in (
        os.environ.get("CTXLAB_CHROMIUM"),
        "/usr/bin/chromium",
        shutil.which("chromium"),
        shutil.which("chromium-browser"),
        shutil.which("google-chrome"),
    ):
        if p and os.path.exists(p):
            return p
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def page_paths() -> list[str]:
    """URL paths of the home page and every page in pages/ (Streamlit drops the number prefix)."""
    out = [""]
    for f in sorted((ROOT / "pages").glob("*.py")):
        stem = f.stem
        out.append(stem.split("_", 1)[1] if stem[:1].isdigit() and "_" in stem else stem)
    return out


@pytest.fixture(scope="module")
def server():
    port = _free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            str(ROOT / "app.py"),
            "--server.headless",
            "true",
            "--server.port",
            str(port),
            "--browser.gatherUsageStats",
            "false",
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            if urllib.request.urlopen(url + "/_stcore/health", timeout=2).read() == b"ok":
                break
        except OSError:
            time.sleep(0.3)
        if proc.poll() is not None:
            pytest.fail(f"streamlit exited: {proc.stderr.read().decode()[-2000:]}")
    else:
        proc.kill()
        pytest.fail("streamlit did not answer /_stcore/health within 60 s")
    yield url
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright import sync_api
    except ImportError:
        _skip_or_fail("playwright is not installed (pip install -r requirements.txt)")
    exe = _chromium()
    if exe is None:
        _skip_or_fail("no Chromium binary (apt-get install chromium, or set CTXLAB_CHROMIUM); .ci/run installs it")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        yield b
        b.close()


def wait_rendered(page, timeout_ms: int = 300_000) -> None:
    """Until the page has a title and its script run has finished."""
    page.wait_for_selector("h1", timeout=timeout_ms)
    page.wait_for_selector('[data-testid="stApp"][data-test-script-state="notRunning"]', timeout=timeout_ms)


def test_every_page_renders_without_error(server, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    titles, took = {}, {}
    for path in page_paths():
        t0 = time.perf_counter()
        page.goto(f"{server}/{path}?lang=en&cap=50")  # a small atlas sample keeps the test short
        wait_rendered(page)
        took[path] = round(time.perf_counter() - t0, 1)
        page.wait_for_timeout(300)
        errors = [
            e.inner_text()[:300]
            for e in page.query_selector_all('[data-testid="stException"], [data-testid="stAlertContentError"]')
        ]
        assert not errors, f"/{path}: {errors}"
        body = page.inner_text("body")
        for m in kinds.names(
            shipped=True
        ):  # a shipped model that did not load shows as a warning or caption, not an error
            said = [
                t
                for t in (
                    f"{m} model is not available",
                    f"{m} not available",
                    f"missing: {checkpoint.rebuild_command(m)}",
                )
                if t.lower() in body.lower()
            ]
            assert not said, f"/{path}: the shipped model {m} did not load: {said}"
        assert "no model is available" not in body.lower(), f"/{path}: no model loaded"
        titles[path] = page.inner_text("h1").strip()
        assert titles[path], f"/{path}: empty title"
    assert len(set(titles.values())) == len(titles), titles  # each page has its own title
    assert titles[""].startswith("ctxlab")
    print("seconds per page:", took)


def test_chinese_mode_shows_no_english_ui_text(server, browser):
    """Issue #13.4/6: in zh mode no page shows English interface words (visible text, every tab, Plotly's text and
    hover templates); model names, formulae, tag codes, special tokens and what the user typed may stay (the
    allowlist in tests/zh_text.py)."""
    from zh_text import page_english

    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    found = {}
    for path in page_paths():
        page.goto(f"{server}/{path}?lang=zh&cap=50")
        wait_rendered(page)
        page.wait_for_timeout(500)
        for where, words in page_english(page).items():
            found[f"/{path} {where}"] = words
    assert not found, "\n".join(f"{k} -> {v}" for k, v in found.items())

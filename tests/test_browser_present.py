"""Presentation mode in a real browser (issue: a projector at 1920×1080): on the Lesson page with ?present=1 the
sidebar is closed; the step's question, its chart and, after the reveal key, the answer lie inside the screen without
scrolling; → goes to the next step and ← back.

Skips like tests/test_browser.py (no Playwright or Chromium) unless CTXLAB_REQUIRE_BROWSER=1; uses its server and
browser fixtures (a fresh browser profile: Playwright's own temporary one)."""

from __future__ import annotations

import pytest
from test_browser import browser, server, wait_rendered  # noqa: F401  (fixtures)

from ctxlib import lesson

W, H = 1920, 1080
# How long a step's compute may take after a key: only a bound on a hang. On a 2-core machine loaded ~5x (the suite
# under two busy loops and four mutation runs) the reveal of a cosine step took over 90 s.
WAIT_MS = 300_000
STEPS = lesson.load("default").steps
FILL_MASK = next(i for i, s in enumerate(STEPS, 1) if s.kind == "fill_mask")
COSINE = next(i for i, s in enumerate(STEPS, 1) if s.kind == "cosine")

BOXES = """() => {
  const box = (el) => { if (!el) return null; const r = el.getBoundingClientRect(); return [r.top, r.bottom, r.width]; };
  const main = document.querySelector('[data-testid="stMain"]');
  const question = [...document.querySelectorAll('[data-testid="stMarkdownContainer"]')]
    .find(e => e.innerText.startsWith('Question'));
  const bottoms = [...document.querySelectorAll('[data-testid="stMainBlockContainer"] [data-testid="stElementContainer"]')]
    .map(e => e.getBoundingClientRect()).filter(r => r.height > 0).map(r => r.bottom);
  return {question: box(question), title: box(document.querySelector('h2')),
          chart: box(document.querySelector('[data-testid="stPlotlyChart"]')),
          answer: box(document.querySelector('[data-testid="stAlertContentSuccess"]')),
          lowest: Math.max(...bottoms), scrolled: window.scrollY + main.scrollTop,
          overflow: main.scrollHeight - main.clientHeight,
          sidebar: document.querySelector('[data-testid="stSidebar"]').getAttribute('data-collapsed'),
          sidebar_right: document.querySelector('[data-testid="stSidebar"]').getBoundingClientRect().right};
}"""


def _settle(page) -> None:
    page.wait_for_timeout(300)
    wait_rendered(page)
    page.wait_for_timeout(500)


def _inside(box, name: str) -> None:
    assert box is not None, f"no {name} on the page"
    top, bottom, width = box
    assert width > 0 and 0 <= top < bottom <= H, f"{name} at {top:.0f}..{bottom:.0f} px, outside the {H} px screen"


@pytest.mark.parametrize("step", [FILL_MASK, COSINE])
def test_a_step_fits_the_screen_and_the_keys_work(server, browser, step):  # noqa: F811
    context = browser.new_context(viewport={"width": W, "height": H})  # a new profile: no remembered sidebar state
    page = context.new_page()
    try:
        page.goto(f"{server}/Lesson?lang=en&present=1&step={step}")
        wait_rendered(page)
        page.wait_for_selector('[data-testid="stCaptionContainer"]:has-text("Keys:")')
        page.wait_for_function(
            "() => document.querySelector('[data-testid=\"stSidebar\"]').getBoundingClientRect().right <= 0",
            timeout=60_000,
        )  # it slides away
        _settle(page)
        b = page.evaluate(BOXES)
        assert b["sidebar"] == "true" and b["sidebar_right"] <= 0, b
        _inside(b["title"], "step title")
        _inside(b["question"], "question")
        assert b["chart"] is None and b["answer"] is None  # hidden until revealed

        page.keyboard.press("r")
        page.wait_for_selector('[data-testid="stAlertContentSuccess"]', timeout=WAIT_MS)
        page.wait_for_selector('[data-testid="stPlotlyChart"]', timeout=WAIT_MS)
        _settle(page)
        b = page.evaluate(BOXES)
        for name in ("title", "question", "chart", "answer"):
            _inside(b[name], name)
        assert b["lowest"] <= H and b["overflow"] <= 0 and b["scrolled"] == 0, b  # nothing below the screen

        title = page.inner_text("h2").strip()
        assert title == STEPS[step - 1].text("title", "en")
        page.keyboard.press("ArrowRight")
        page.wait_for_function(
            "t => document.querySelector('h2') && document.querySelector('h2').innerText.trim() !== t",
            arg=title,
            timeout=WAIT_MS,
        )
        _settle(page)
        assert page.inner_text("h2").strip() == STEPS[step].text("title", "en")
        assert f"step={step + 1}" in page.url
        assert page.query_selector('[data-testid="stAlertContentSuccess"]') is None  # the next step starts hidden
        page.keyboard.press("ArrowLeft")
        page.wait_for_function("t => document.querySelector('h2').innerText.trim() === t", arg=title, timeout=WAIT_MS)
        _settle(page)
        assert f"step={step}" in page.url
    finally:
        context.close()


def test_keys_do_nothing_outside_presentation_mode(server, browser):  # noqa: F811
    page = browser.new_page(viewport={"width": W, "height": H})
    try:
        page.goto(f"{server}/Lesson?lang=en&step={COSINE}")
        wait_rendered(page)
        page.keyboard.press("ArrowRight")
        page.keyboard.press("r")
        page.wait_for_timeout(1500)
        wait_rendered(page)
        assert page.inner_text("h2").strip() == STEPS[COSINE - 1].text("title", "en")
        assert page.query_selector('[data-testid="stAlertContentSuccess"]') is None
        assert (
            page.evaluate("document.querySelector('[data-testid=\"stSidebar\"]').getAttribute('data-collapsed')")
            == "false"
        )
    finally:
        page.close()

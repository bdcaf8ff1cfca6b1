"""A fresh server first opened at a page's URL: Streamlit runs that page through its file-based navigation of
pages/ (English file names; app.py never runs) while its class flag `uses_pages_directory` is set. The page header
clears the flag and reruns, so the session goes through app.py's translated navigation."""
from pathlib import Path

import pytest
from streamlit.runtime.pages_manager import PagesManager
from streamlit.testing.v1 import AppTest

PAGE = str(Path(__file__).resolve().parent.parent / "pages" / "7_Results.py")


@pytest.fixture(autouse=True)
def _no_prewarm(monkeypatch):
    monkeypatch.setenv("CTXLAB_NO_PREWARM", "1")


def test_a_page_run_under_file_navigation_leaves_it(monkeypatch):
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.query_params["lang"] = "zh"
    orig = PagesManager.__init__

    def init(self, *a, **kw):  # what a fresh server with pages/ next to app.py sets
        orig(self, *a, **kw)
        PagesManager.uses_pages_directory = True

    monkeypatch.setattr(PagesManager, "__init__", init)
    at.run()
    assert PagesManager.uses_pages_directory is False  # cleared by the page header, so later runs use app.py
    assert not at.exception
    assert at.title and "结果" in at.title[0].value

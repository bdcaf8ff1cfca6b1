"""A fresh server: Streamlit decides per script run whether to run app.py or its file-based navigation of pages/
(English file names, the home page listed as "app"; app.py never runs) from a process-wide class flag,
`PagesManager.uses_pages_directory`: set when the first session starts (pages/ exists), cleared by the first
st.navigation call. A session opened at a page's URL before that call starts under the file navigation; the page
header notices (app.py has not run in the session) and reruns through app.py's translated navigation.

The flag is Streamlit's internals: these tests set it only to recreate what a fresh server does."""

from pathlib import Path

import pytest
import streamlit.commands.navigation as st_navigation
from streamlit.runtime.pages_manager import PagesManager
from streamlit.testing.v1 import AppTest

from ctxlib.app import widgets
from ctxlib.app.i18n import catalogue

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
PAGE = str(ROOT / "pages" / "7_Results.py")


@pytest.fixture(autouse=True)
def _no_prewarm(monkeypatch):
    monkeypatch.setenv("CTXLAB_NO_PREWARM", "1")


@pytest.fixture
def fresh_server(monkeypatch):
    """Every run starts as a fresh server's first session does: the flag is set (pages/ next to the entrypoint)."""
    orig = PagesManager.__init__

    def init(self, *a, **kw):
        orig(self, *a, **kw)
        PagesManager.uses_pages_directory = True

    monkeypatch.setattr(PagesManager, "__init__", init)


@pytest.mark.parametrize("other_session", [False, True], ids=["alone", "other_session_ran_app_py"])
def test_a_deep_link_on_a_fresh_server_ends_under_app_py(fresh_server, monkeypatch, other_session):
    """other_session: a second deep link opened at the same moment runs app.py's st.navigation between this session's
    start (file navigation chosen) and its page header, so the flag is already off there. Checking the flag missed
    that case: the page stayed under the file navigation ("app", "Lesson", ... in the sidebar) until a reload."""
    file_navigation = []
    if other_session:
        orig = st_navigation._navigation

        def navigation(*a, **kw):  # what the file navigation calls to list pages/; then the other session's app.py
            page = orig(*a, **kw)
            file_navigation.append(page)
            PagesManager.uses_pages_directory = False
            return page

        monkeypatch.setattr(st_navigation, "_navigation", navigation)
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["lang"] = "zh"
    at.switch_page("pages/7_Results.py").run()  # the first run opens /Results, as a deep link does
    assert not at.exception, at.exception
    if other_session:
        assert file_navigation, "the run did not start under the file navigation: the test no longer recreates the race"
    zh = catalogue("zh")
    assert at.session_state[widgets.TAB_TITLE] == f"{zh['pages.Results.label']} · ctxlab"  # app.py ran the page
    assert at.title and at.title[0].value == zh["results.title"]


def test_a_page_run_on_its_own_is_left_alone(fresh_server):
    """A page that is its own entrypoint (AppTest.from_file on the page) runs once, without the rerun."""
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.query_params["lang"] = "zh"
    at.run()
    assert not at.exception
    assert widgets.TAB_TITLE not in at.session_state and widgets._LEFT_FILE_NAVIGATION not in at.session_state
    assert at.title and "结果" in at.title[0].value

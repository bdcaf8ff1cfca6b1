"""Screenshots of the lecture's views as a projector shows them: 1920×1080, presentation mode, zh and en.

    .venv/bin/python bench/screenshots.py --out /tmp/shots/after
    .venv/bin/python bench/screenshots.py --root ../wt-before --out /tmp/shots/before   # another checkout, same list
    .venv/bin/python bench/screenshots.py --out /tmp/x --only lesson_04 home_carved --lang en --no-present

Starts `streamlit run app.py` in --root (this checkout by default) on a free loopback port, opens every view of the
list below in headless Chromium (Debian `chromium`, Playwright; a fresh profile per view, so no remembered sidebar),
waits until the page's script run has finished, and saves the screen as the audience sees it (the viewport, not the
whole scrolled page: what lies below the fold is not in the picture; a lesson step after its Reveal button, Home
scrolled to its demo's chart) as <out>/<view>_<lang>.png. Prints one line per
picture and writes <out>/index.md. A view that does not exist in an older checkout (a new page or step) comes out
as that checkout's "page not found" or its last step: look at the picture.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from app_timing import ARGS, free_port  # noqa: E402  (the Chromium flags and a free loopback port, as app_timing's)
from classroom_load import stop_server  # noqa: E402

# view name -> URL path and query (lang= and present= are added). Issue #34's fixes, one view each.
VIEWS = {
    "home": "",  # the demo: full layers summarised, the noise band, one expander of notes
    "home_carved": "?word=手机&a=我买了新手机&b=他的手机没电了&c=手机游戏很好玩",  # 手机 cut out of 新手机
    "lesson_04": "Lesson?step=4",  # an unseen word from its characters
    "lesson_05": "Lesson?step=5",  # ELMo's two LMs: the true word in the backward chart
    "lesson_09": "Lesson?step=9",  # fill-mask: the original characters above each [MASK]
    "lesson_11": "Lesson?step=11",  # NSP on a pair the model gets right
    "lesson_13": "Lesson?step=13",  # positions
    "lesson_14": "Lesson?step=14",  # fine-tuning: the live job
    "lesson_15": "Lesson?step=15",  # GPT's next character: the answer from the model's own top guess
    "type_token": "Type_vs_token",  # the maps, heatmaps and the sense-accuracy tab (only the open tab runs)
    "transformer": "Transformer",  # Q, K, V, scores, softmax, heads, positions
    "gpt_writing": "GPT_writing",  # the note above the output, repetition controls, names kept out
    "pretraining": "BERT_pretraining",  # fill-mask with its note; the NSP sample
    "results": "Results",  # the verdicts
    "training": "Training",  # teacher-facing details behind one expander
}


def chromium() -> str:
    for p in (os.environ.get("CTXLAB_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium")):
        if p and os.path.exists(p):
            return p
    raise SystemExit("no Chromium (apt-get install chromium fonts-noto-cjk, or set CTXLAB_CHROMIUM)")


def start(root: Path, port: int) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port)]
    cmd += ["--server.address", "127.0.0.1", "--server.headless", "true", "--browser.gatherUsageStats", "false"]
    proc = subprocess.Popen(cmd, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(240):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return proc
        except OSError:
            time.sleep(0.5)
    proc.terminate()
    raise SystemExit(f"streamlit in {root} did not answer on port {port}")


def url_of(base: str, view: str, lang: str, present: bool) -> str:
    q = VIEWS[view]
    path, _, query = q.partition("?")
    extra = f"lang={lang}" + ("&present=1" if present else "")
    return f"{base}/{path}?{query + '&' if query else ''}{extra}"


def shoot(browser, url: str, out: Path, w: int, h: int, timeout_ms: int, reveal=False, scroll=False) -> str:
    context = browser.new_context(viewport={"width": w, "height": h})
    page = context.new_page()
    try:
        page.goto(url)
        page.wait_for_selector("h1", timeout=timeout_ms)
        page.wait_for_timeout(500)
        page.wait_for_selector('[data-testid="stApp"][data-test-script-state="notRunning"]', timeout=timeout_ms)
        page.wait_for_timeout(1500)  # the sidebar slides away, Plotly draws
        if reveal and (btn := page.get_by_role("button", name=re.compile("Reveal|揭晓"))).count():
            btn.first.click()  # the answer, as the class sees it after the teacher's reveal
            page.wait_for_timeout(800)
            page.wait_for_selector('[data-testid="stApp"][data-test-script-state="notRunning"]', timeout=timeout_ms)
            page.wait_for_timeout(1500)
        if scroll and (chart := page.locator('[data-testid="stPlotlyChart"]')).count():
            chart.first.scroll_into_view_if_needed()  # the demo's chart and what is around it, not the page's top
            page.wait_for_timeout(800)
        page.screenshot(path=str(out))
        return "ok"
    except Exception as e:  # one view failing must not stop the others
        page.screenshot(path=str(out))
        return f"{type(e).__name__}: {str(e).splitlines()[0][:120]}"
    finally:
        context.close()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--root", type=Path, default=ROOT, help="the checkout to serve (default: this one)")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--lang", nargs="+", default=["zh", "en"], choices=["zh", "en"])
    p.add_argument("--only", nargs="+", default=None, choices=sorted(VIEWS), help="some views (default: all)")
    p.add_argument("--size", default="1920x1080", help="WxH of the screen")
    p.add_argument("--no-present", action="store_true", help="the normal layout instead of presentation mode")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds a view may take to render")
    a = p.parse_args(argv)
    try:
        w, h = (int(x) for x in a.size.lower().split("x"))
    except ValueError:
        print(f"--size must look like 1920x1080, not {a.size!r}", file=sys.stderr)
        return 2
    from playwright import sync_api

    a.out.mkdir(parents=True, exist_ok=True)
    port = free_port()
    proc = start(a.root.resolve(), port)
    lines = [f"# Screenshots of {a.root.resolve()} at {w}×{h}" + ("" if a.no_present else ", presentation mode"), ""]
    try:
        with sync_api.sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium(), args=ARGS)
            for view in a.only or list(VIEWS):
                for lang in a.lang:
                    out = a.out / f"{view}_{lang}.png"
                    t0 = time.perf_counter()
                    url = url_of(f"http://127.0.0.1:{port}", view, lang, not a.no_present)
                    res = shoot(browser, url, out, w, h, int(a.timeout * 1000), view.startswith("lesson"),
                                view.startswith("home"))  # fmt: skip
                    line = f"{out.name}: {res} ({time.perf_counter() - t0:.1f} s) {VIEWS[view] or '/'}"
                    print(line, flush=True)
                    lines.append(f"- {line}")
            browser.close()
    finally:
        stop_server(proc, 15)
    (a.out / "index.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

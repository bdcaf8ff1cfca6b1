"""Time the app in a real browser: cold start of the home page and warm updates of the Type vs token page.

    .venv/bin/python bench/app_timing.py [--runs 10] [--screens logs/screens] [--port 0]

1. Starts headless Chromium (the system /usr/bin/chromium), then `streamlit run app.py` and times from launching
   the server to the home page's title, its live-demo chart, and the end of its script run.
2. Opens the Type vs token page with 10 sentences x all loaded models, waits for the first (cold) run, then
   triggers `--runs` reruns with Streamlit's "r" shortcut: everything is cached, so this is the warm update.
   Server time is the page script's own wall time (ctxlib.app.widgets.record_time writes it to CTXLAB_TIMING_LOG);
   the browser round trip (key press -> script state back to notRunning) is reported too.
3. With --screens, saves a full-page PNG of the home page and every page in pages/.
Prints one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from classroom_load import stop_server  # noqa: E402  (SIGTERM, then SIGKILL past the wait)

ROOT = Path(__file__).resolve().parent.parent
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TEN = """苹果真好吃，又甜又脆。 | 水果
妈妈去市场买了一袋红富士苹果。 | 水果
秋天到了，果园里的苹果都熟了。 | 水果
每天吃一个苹果，对身体有好处。 | 水果
他把苹果削了皮，切成小块给孩子吃。 | 水果
苹果手机很好用，就是价格有点贵。 | 品牌
苹果公司今天发布了新款笔记本电脑。 | 品牌
我的苹果电脑系统又要更新了。 | 品牌
这家店是苹果的授权经销商，可以保修。 | 品牌
苹果的股价在发布会后上涨了三个百分点。 | 品牌"""
RUNNING = '[data-testid="stApp"][data-test-script-state="running"]'
DONE = '[data-testid="stApp"][data-test-script-state="notRunning"]'


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def page_paths() -> list[str]:
    out = []
    for f in sorted((ROOT / "pages").glob("*.py")):
        out.append(f.stem.split("_", 1)[1] if f.stem[:1].isdigit() and "_" in f.stem else f.stem)
    return out


def server_times(log: Path, page: str) -> list[float]:
    if not log.exists():
        return []
    return [float(ln.split("\t")[2]) for ln in log.read_text().splitlines() if ln.split("\t")[1] == page]


def shoot(page, path: str) -> None:
    """Full-page PNG: Streamlit scrolls inside its main block, so grow the viewport to the content first."""
    h = page.evaluate(
        "() => Math.max(...[...document.querySelectorAll('[data-testid=stMainBlockContainer], "
        "[data-testid=stSidebarContent]')].map(e => e.scrollHeight), 800)"
    )
    page.set_viewport_size({"width": 1400, "height": min(int(h) + 120, 7000)})
    page.wait_for_timeout(1200)  # plotly charts resize
    page.screenshot(path=path, full_page=True)
    page.set_viewport_size({"width": 1400, "height": 1000})


def wait_done(page, timeout_ms=180_000):
    page.wait_for_selector("h1", timeout=timeout_ms)
    page.wait_for_selector(DONE, timeout=timeout_ms)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--screens", default=None, help="folder for full-page screenshots")
    ap.add_argument("--lang", default="zh")
    a = ap.parse_args()
    from playwright.sync_api import sync_playwright

    port = a.port or free_port()
    url = f"http://127.0.0.1:{port}"
    log = Path(tempfile.mkdtemp()) / "timing.tsv"
    env = dict(os.environ, CTXLAB_TIMING_LOG=str(log))
    res: dict = {"port": port}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=os.environ.get("CTXLAB_CHROMIUM", "/usr/bin/chromium"), args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "streamlit",
                "run",
                "app.py",
                "--server.headless",
                "true",
                "--server.port",
                str(port),
                "--browser.gatherUsageStats",
                "false",
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            while True:
                try:
                    if urllib.request.urlopen(url + "/_stcore/health", timeout=1).read() == b"ok":
                        break
                except OSError:
                    time.sleep(0.05)
            res["cold_server_ready_s"] = round(time.perf_counter() - t0, 2)
            page.goto(f"{url}/?lang={a.lang}")
            page.wait_for_selector("h1", timeout=60_000)
            res["cold_home_title_s"] = round(time.perf_counter() - t0, 2)
            page.wait_for_selector('[data-testid="stPlotlyChart"]', timeout=120_000)
            res["cold_home_demo_chart_s"] = round(time.perf_counter() - t0, 2)
            page.wait_for_selector(DONE, timeout=120_000)
            res["cold_home_done_s"] = round(time.perf_counter() - t0, 2)
            res["home_first_run_server_ms"] = server_times(log, "home")[:1]
            if a.screens:
                Path(a.screens).mkdir(parents=True, exist_ok=True)
                shoot(page, f"{a.screens}/home_{a.lang}.png")

            q = urllib.parse.urlencode(
                {"lang": a.lang, "set": "苹果", "word": "苹果", "s": TEN, "models": "word2vec,elmo,bert"}
            )
            t1 = time.perf_counter()
            page.goto(f"{url}/Type_vs_token?{q}")
            wait_done(page)
            res["type_token_first_visit_s"] = round(time.perf_counter() - t1, 2)
            res["models_on_page"] = page.eval_on_selector_all('[data-testid="stPlotlyChart"]', "e => e.length")
            page.wait_for_timeout(500)
            n0 = len(server_times(log, "type_token"))
            rtt = []
            for _ in range(a.runs):
                page.mouse.click(5, 990)  # focus the page, not an input, so "r" means rerun
                t2 = time.perf_counter()
                page.keyboard.press("r")
                try:
                    page.wait_for_selector(RUNNING, timeout=3000)
                except Exception:
                    pass  # a very fast run may finish before we look
                page.wait_for_selector(DONE, timeout=60_000)
                rtt.append((time.perf_counter() - t2) * 1000)
                page.wait_for_timeout(200)
            warm = server_times(log, "type_token")[n0:]
            res["warm_type_token_server_ms"] = {
                "n": len(warm),
                "median": round(statistics.median(warm), 1) if warm else None,
                "min": round(min(warm), 1) if warm else None,
                "max": round(max(warm), 1) if warm else None,
            }
            res["warm_type_token_browser_roundtrip_ms"] = {
                "median": round(statistics.median(rtt), 1),
                "max": round(max(rtt), 1),
            }
            if a.screens:
                shoot(page, f"{a.screens}/type_token_{a.lang}.png")
                for i, name in ((2, "segmentation"),):
                    page.locator('[data-testid="stTab"]').nth(i).click()
                    page.wait_for_timeout(500)
                    shoot(page, f"{a.screens}/type_token_{name}_{a.lang}.png")
                for path in page_paths():
                    if path == "Type_vs_token":
                        continue
                    t3 = time.perf_counter()
                    page.goto(f"{url}/{path}?lang={a.lang}")
                    wait_done(page)
                    res[f"first_visit_{path}_s"] = round(time.perf_counter() - t3, 2)
                    shoot(page, f"{a.screens}/{path}_{a.lang}.png")
                page.goto(f"{url}/Polysemy_atlas?lang={a.lang}&colour=kmeans&k=3")
                wait_done(page)
                shoot(page, f"{a.screens}/Polysemy_atlas_kmeans_{a.lang}.png")
            res["errors_seen"] = page.eval_on_selector_all('[data-testid="stException"]', "e => e.length")
        finally:
            stop_server(proc)
            browser.close()
    print(json.dumps(res, ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Server time of the app's part-2 pages (ELMo layers, BERT attention, BERT pre-training) and their screenshots.

    .venv/bin/python bench/app2_timing.py [--sentences 5] [--live 60] [--screens logs/screens2]

1. For each page, an AppTest session runs the defaults once (models load, corpus sample loads), then for each of
   `--sentences` different 20-character sentences: types it (a new sentence: model calls + plots), reruns with
   nothing changed (cached), and moves one widget (ELMo: the word slider; attention: the hide-[CLS]/[SEP]
   switch; pre-training: another character to mask). Server time is the page script's own wall time
   (ctxlib.app.widgets.record_time, kept in session state), so AppTest's polling does not count.
2. `--live S`: clicks "Train" on the ELMo page with max seconds = S and times the whole run (features + training).
3. `--screens DIR`: starts `streamlit run app.py`, opens each page in headless Chromium (Playwright driving the
   system /usr/bin/chromium), waits for every chart, and saves a PNG (and one per tab of the attention page).
Prints one JSON object; CTXLIB_CHECKPOINTS selects the checkpoints (default checkpoints/).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SENTENCES = [  # 20 characters each
    "我昨天在超市买了两斤新鲜的苹果回家吃。",
    "苹果公司今天发布了新款手机和笔记本电脑",
    "这家酒店的服务很好，房间也干净又舒适。",
    "他在银行存了一笔钱，准备明年出国留学。",
    "学校组织同学们参加了一次有意义的活动。",
    "今天天气很好，我们一起去公园散步聊天。",
    "这台电脑的屏幕很清楚，但是电池不耐用。",
]
PAGES = {
    "elmo_layers": ("3_ELMo_layers.py", "elmo_text"),
    "bert_attention": ("4_BERT_attention.py", "att_text"),
    "bert_pretraining": ("5_BERT_pretraining.py", "pt_lm"),
}


def _ms(at, name: str) -> float:
    return float(at.session_state[f"{name}_server_ms"])


def time_page(name: str, n: int) -> dict:
    from streamlit.testing.v1 import AppTest

    page, text_key = PAGES[name]
    at = AppTest.from_file(str(ROOT / "pages" / page), default_timeout=600)
    at.query_params["lang"] = "en"
    t0 = time.perf_counter()
    at.run()
    first = time.perf_counter() - t0
    assert not at.exception, at.exception
    new, same, widget = [], [], []
    for s in SENTENCES[:n]:
        assert len(s) >= 19, s
        at.text_input(key=text_key).set_value(s)
        if name == "bert_pretraining":
            at.text_input(key="pt_text").set_value(s)
        at.run()
        assert not at.exception, at.exception
        new.append(_ms(at, name))
        at.run()
        same.append(_ms(at, name))
        if name == "elmo_layers":
            sl = [w for w in at.select_slider if w.key and w.key.startswith("elmo_pos_")][0]
            sl.set_value(len(sl.options) - 1)
        elif name == "bert_attention":
            at.toggle(key="att_hide").set_value(not at.toggle(key="att_hide").value)
        else:
            pills = [w for w in at.get("button_group") if getattr(w, "key", "") and w.key.startswith("pt_pills_")]
            if pills:
                pills[0].set_value([2, 7])
        at.run()
        assert not at.exception, at.exception
        widget.append(_ms(at, name))
    med = lambda xs: round(statistics.median(xs), 1) if xs else None  # noqa: E731
    return {
        "first_run_s": round(first, 2),
        "new_sentence_ms": [round(x, 1) for x in new],
        "new_sentence_median_ms": med(new),
        "rerun_same_median_ms": med(same),
        "widget_change_median_ms": med(widget),
        "widget_ms": [round(x, 1) for x in widget],
    }


def time_live(seconds: int) -> dict:
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "pages" / PAGES["elmo_layers"][0]), default_timeout=900)
    at.query_params["lang"] = "en"
    at.run()
    at.slider(key="elmo_live_sec").set_value(seconds)
    at.button(key="elmo_live_start").click()
    t0 = time.perf_counter()
    at.run()  # the training goes into the server's job line (ctxlib.jobs); wait for it, then let the page pick it up
    from ctxlib import jobs

    job = jobs.owned_by(at.session_state["elmo_live_owner"], "elmo_mix")[-1]
    job.wait()
    wall = time.perf_counter() - t0
    at.run()
    assert not at.exception, at.exception
    res = at.session_state["elmo_live_result"]
    task, lam = res["task"], res["l2"]
    return {
        "task": task,
        "lambda": lam,
        "max_seconds": seconds,
        "wall_s": round(wall, 1),
        "library_seconds": res.get("seconds"),
        "steps": len(res.get("history") or []),
        "mix_weights": [round(x, 3) for x in res["mix_weights"]],
        "gamma": round(res["gamma"], 3),
        "score": round(res["score"], 4),
        "n_train": res.get("n_train"),
    }


def screens(out: Path) -> dict:
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true", "--server.port", str(port)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    shots = {}
    try:
        with sync_playwright() as p:
            b = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu"])
            for url, height in (
                ("ELMo_layers", 5000),
                ("BERT_attention", 1900),
                ("BERT_pretraining", 3400),
                ("BERT_attention?lang=zh&b=它的电池也很耐用", 1900),
            ):
                pg = b.new_page(viewport={"width": 1400, "height": height})
                t0 = time.time()
                for _ in range(60):  # the server may still be starting
                    try:
                        pg.goto(f"http://localhost:{port}/{url}")
                        break
                    except Exception:
                        time.sleep(1)
                pg.wait_for_selector("h1", timeout=180_000)
                _settle(pg)
                tag = url.replace("?", "_").replace("=", "-").replace("&", "_")[:40]
                pg.screenshot(path=str(out / f"{tag}.png"))
                shots[tag] = {
                    "s": round(time.time() - t0, 1),
                    "exceptions": pg.locator("[data-testid='stException']").count(),
                }
                if url.startswith("BERT_attention"):
                    for i, tab in enumerate(pg.get_by_role("tab").all()[1:], start=1):
                        tab.click()
                        _settle(pg, 30)
                        pg.screenshot(path=str(out / f"{tag}_tab{i}.png"))
                pg.close()
            b.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
    return shots


def _settle(pg, timeout: float = 120) -> None:
    """Wait for the script run to end and for every visible Plotly chart to draw (plotly.js loads lazily)."""
    pg.wait_for_timeout(1500)
    pg.wait_for_selector('[data-testid="stApp"][data-test-script-state="notRunning"]', timeout=300_000)
    t0 = time.time()
    while time.time() - t0 < timeout:
        n = pg.evaluate("""() => [...document.querySelectorAll('[data-testid="stPlotlyChart"]')]
              .filter(e => e.offsetParent !== null && !e.querySelector('.main-svg')).length""")
        if n == 0:
            break
        pg.wait_for_timeout(1000)
    pg.wait_for_timeout(2000)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sentences", type=int, default=5)
    ap.add_argument("--pages", default=",".join(PAGES))
    ap.add_argument("--live", type=int, default=0, help="also time the live mix training with this many max seconds")
    ap.add_argument("--screens", default=None, help="folder for browser screenshots")
    args = ap.parse_args()
    import logging

    logging.getLogger("streamlit").setLevel(logging.ERROR)
    from ctxlib import checkpoint

    res = {
        "checkpoints": str(checkpoint.CHECKPOINT_DIR),
        "cpu_count": os.cpu_count(),
        "load_avg_start": os.getloadavg()[0],
        "pages": {},
    }
    for name in [p for p in args.pages.split(",") if p]:
        res["pages"][name] = time_page(name, args.sentences)
        print(name, json.dumps(res["pages"][name]), file=sys.stderr)
    if args.live:
        res["live_mix"] = time_live(args.live)
    if args.screens:
        res["screens"] = screens(Path(args.screens))
    res["load_avg_end"] = os.getloadavg()[0]
    print(json.dumps(res, ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The app's speed targets, page by page: each page's first visit after the server's warm-up, then one or two typical
interactions on that page, over Streamlit's own websocket protocol (bench/classroom_load.py's functions).

    .venv/bin/python bench/page_speed.py                  # start a server, wait for its warm-up, measure every page
    .venv/bin/python bench/page_speed.py --pages Home "Type vs token"

1. starts `streamlit run app.py` on a free 127.0.0.1 port with CTXLAB_TIMING_LOG set, opens Home once with other
   sentences than the defaults (the warm-up starts after a process's first page run), and waits until the timing log
   shows the warm-up's last step (warmup:gc_freeze);
2. for every page (Home and pages/*.py), a fresh session's first run (the page's default view, as a new visitor opens
   it): wall time from sending the rerun to `script_finished`, and server time (what widgets.record_time logged during
   the run; several entries: the largest);
3. on that session, each interaction of INTERACTIONS: the browser's message for it, a rerun carrying the changed
   widget's value (found by its key in the first run's elements; only that fragment when the widget is inside one).
   Other widgets keep their values (Streamlit keeps a session's widget state between runs).
What was computed before stays on disk (ctxlib.cache: the atlas's samples, type vectors, ...): a word an earlier run
looked up is read, not encoded; --fresh-cache gives the server an empty CTXLAB_CACHE (the warm-up then fills it).
Targets: first visit <= 2 s, interaction <= 1 s (wall time, loopback; the browser's drawing not included). Prints a
table, then one JSON line. Written for ctxlab.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import classroom_load as cl  # noqa: E402

FIRST_TARGET_S, INTERACTION_TARGET_S = 2.0, 1.0
WARMUP_DONE = "warmup:gc_freeze"
WIDGETS = ("text_input", "text_area", "selectbox", "radio", "slider", "button", "checkbox", "number_input")


# URL path -> [(label, widget key, change)]: change is ("text", f(old) -> new), ("next",) the next option, ("prev",),
# ("value", x) for a slider / number, ("press",) for a button. Typical: a new sentence or word, a slider or select.
def _new_sentence(old: str) -> str:
    return "昨天，" + old


INTERACTIONS: dict[str, list[tuple[str, str, tuple]]] = {
    "": [
        ("new sentence A", "home_a_w", ("text", lambda s: cl.student_params("", 1, 0)["a"])),
        ("new word", "home_word_w", ("text", lambda s: "吃")),
    ],
    "Lesson": [("next step", "lesson_next", ("press",))],
    "Type_vs_token": [
        ("10 new sentences", "tt_text", ("text", lambda s: cl.student_params("Type_vs_token", 1, 0)["s"])),
        ("projection", "tt_proj_w", ("next",)),
    ],
    "Polysemy_atlas": [("layer", "at_layer", ("prev",)), ("new word", "at_word_w", ("text", lambda s: "会"))],
    "ELMo_layers": [("new sentence", "elmo_text", ("text", _new_sentence))],
    "BERT_attention": [
        ("new sentence", "att_text", ("text", _new_sentence)),
        ("threshold", "att_hv_thr", ("value", 0.1)),
    ],
    "Transformer": [("new sentence", "mx_text", ("text", _new_sentence)), ("layer", "mx_layer", ("next",))],
    "BERT_pretraining": [("new sentence", "pt_text", ("text", _new_sentence)), ("top k", "pt_k", ("value", 7))],
    "GPT_writing": [("new prompt", "gw_prompt", ("text", _new_sentence)), ("temperature", "gw_temp", ("value", 1.2))],
    "Results": [],
    "BERT_finetuning": [("example", "ft_example_", ("next",))],
    "Training": [("word", "tr_word", ("next",)), ("layer", "tr_layer", ("next",))],
}


def widget_key(wid: str) -> str:
    """Streamlit's widget id '$$ID-<hash>-<user key>' -> the user key ('' for a widget without one)."""
    parts = wid.split("-", 2)
    return parts[2] if len(parts) == 3 and wid.startswith("$$ID") else ""


def _current_index(w, options: list[str]) -> int:
    if getattr(w, "set_value", False) and getattr(w, "raw_value", None) in options:
        return options.index(w.raw_value)
    d = w.default
    d = (list(d) or [0])[0] if not isinstance(d, int) else d
    return int(d) if 0 <= int(d) < len(options) else 0


def widget_state(kind: str, w, change: tuple):
    """The WidgetState a browser sends when the user makes `change` to widget proto `w` (of element type `kind`)."""
    from streamlit.proto.WidgetStates_pb2 import WidgetState

    s = WidgetState(id=w.id)
    how = change[0]
    if how == "text":
        s.string_value = change[1](w.value if w.set_value else w.default)
    elif how == "press":
        s.trigger_value = True
    elif how == "value" and kind == "slider":
        s.double_array_value.data.extend([float(change[1])])
    elif how == "value":
        s.double_value = float(change[1])
    elif kind == "slider":  # a select_slider: its options by their shown names
        opts = list(w.options)
        cur = int(list(w.value)[0]) if w.set_value and list(w.value) else int((list(w.default) or [0])[0])
        s.string_array_value.data.extend([opts[(cur + (1 if how == "next" else -1)) % len(opts)]])
    else:  # selectbox / radio: the option's shown name
        opts = list(w.options)
        s.string_value = opts[(_current_index(w, opts) + (1 if how == "next" else -1)) % len(opts)]
    return s


async def run_once(ws, query: str, page: str, page_hash: str, timeout: float, widgets=(), fragment_id: str = ""):
    """One run on an open session: (seconds or None on timeout, tally, {key: (kind, proto, fragment id)}, page hash)."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    tally, found = cl.new_tally(), {}
    t0 = time.perf_counter()
    await ws.send(cl.rerun_msg(query, page, page_hash, widgets, fragment_id))
    done = None
    while done is None and (left := t0 + timeout - time.perf_counter()) > 0:
        try:
            data = await asyncio.wait_for(ws.recv(), left)
        except asyncio.TimeoutError:
            break
        fwd = ForwardMsg()
        fwd.ParseFromString(data)
        if fwd.WhichOneof("type") == "new_session":
            page_hash = fwd.new_session.page_script_hash or page_hash
        elif fwd.WhichOneof("type") == "delta" and fwd.delta.WhichOneof("type") == "new_element":
            el = fwd.delta.new_element
            if (kind := el.WhichOneof("type")) in WIDGETS:
                w = getattr(el, kind)
                found[widget_key(w.id)] = (kind, w, fwd.delta.fragment_id)
        done = cl.scan(fwd, tally)
    return (time.perf_counter() - t0 if done else None), tally, found, page_hash


def log_lines(log: Path) -> list[str]:
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def server_ms(log: Path, skip: int) -> float | None:
    """The largest page time (not a warm-up step) in the timing log's lines after its first `skip` (those written
    before the run was sent)."""
    ms = [float(ln.split("\t")[2]) for ln in log_lines(log)[skip:] if not ln.split("\t")[1].startswith("warmup:")]
    return max(ms, default=None)


async def measure_page(uri: str, page: str, lang: str, log: Path, timeout: float) -> list[dict]:
    """A fresh session's first run of `page`, then its interactions: one row each."""
    query = urllib.parse.urlencode({"lang": lang})
    rows = []
    async with cl.connect(uri, timeout) as ws:
        since = len(log_lines(log))
        s, tally, found, page_hash = await run_once(ws, query, page, "", timeout)
        rows.append(row(page, "first visit", s, server_ms(log, since), tally, FIRST_TARGET_S))
        for label, key, change in INTERACTIONS.get(page, []):
            hit = next((k for k in found if k == key or (key.endswith("_") and k.startswith(key))), None)
            if hit is None or s is None:
                rows.append(
                    {
                        **row(page, label, None, None, cl.new_tally(), INTERACTION_TARGET_S),
                        "error": f"widget {key!r} not on the page" if s is not None else "first run timed out",
                    }
                )
                continue
            kind, w, frag = found[hit]
            since = len(log_lines(log))
            s2, tally, more, page_hash = await run_once(
                ws, query, page, page_hash, timeout, [widget_state(kind, w, change)], frag
            )
            found.update(more)
            rows.append(row(page, label, s2, server_ms(log, since), tally, INTERACTION_TARGET_S, fragment=bool(frag)))
    return rows


def row(
    page: str, what: str, s: float | None, ms: float | None, tally: dict, target: float, fragment: bool = False
) -> dict:
    errors = tally["exceptions"] + tally["error_alerts"] + tally["page_errors"]
    return {
        "page": page or "Home",
        "what": what,
        "wall_s": None if s is None else round(s, 3),
        "server_s": None if ms is None else round(ms / 1000, 3),
        "target_s": target,
        "fragment": fragment,
        "errors": errors,
        "first_error": tally["first_error"],
        "pass": s is not None and s <= target and errors == 0,
    }


def wait_warmup(log: Path, max_s: float) -> float | None:
    """Seconds until the timing log shows the warm-up's last step (None: not within `max_s`)."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < max_s:
        if log.exists() and WARMUP_DONE in log.read_text(encoding="utf-8"):
            return round(time.perf_counter() - t0, 1)
        time.sleep(1)
    return None


def warmup_steps(log: Path) -> dict[str, float]:
    out = {}
    for line in log.read_text(encoding="utf-8").splitlines():
        _, page, ms = line.split("\t")
        if page.startswith("warmup:"):
            out[page[7:]] = round(float(ms) / 1000, 2)
    return out


def table(rows: list[dict]) -> str:
    head = f"{'page':<17} {'run':<16} {'wall s':>7} {'server s':>8} {'target':>6}  result"
    lines = [head, "-" * len(head)]
    for r in rows:
        f = lambda v: "-" if v is None else f"{v:.3f}"  # noqa: E731
        res = (
            "pass"
            if r["pass"]
            else "FAIL" + (f" ({r.get('error') or r['first_error']})" if r.get("error") or r["first_error"] else "")
        )
        lines.append(
            f"{r['page']:<17} {r['what'] + (' *' if r['fragment'] else ''):<16} {f(r['wall_s']):>7} "
            f"{f(r['server_s']):>8} {r['target_s']:>6.1f}  {res}"
        )
    return "\n".join(lines) + "\n(* a fragment rerun: the page's own timer does not run, server time not logged)"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pages", nargs="*", default=None, help="pages to measure (default: Home and every pages/*.py)")
    p.add_argument("--app", default="app.py")
    p.add_argument("--lang", default="zh", choices=["zh", "en"])
    p.add_argument("--timeout", type=float, default=120.0, help="seconds one run may take")
    p.add_argument(
        "--fresh-cache",
        action="store_true",
        help="the server on an empty CTXLAB_CACHE (a temp folder): nothing computed by earlier runs on disk",
    )
    p.add_argument("--warmup-wait", type=float, default=900.0, help="at most so many seconds for the server's warm-up")
    args = p.parse_args(argv)
    names = cl.page_names()
    wanted = args.pages or ["Home", *sorted({v for v in names.values() if v}, key=_file_order)]
    if bad := [n for n in wanted if n not in names]:
        print(f"error: unknown page(s) {', '.join(map(repr, bad))}", file=sys.stderr)
        return 2
    if os.environ.get("CTXLAB_NO_PREWARM"):
        print("error: CTXLAB_NO_PREWARM is set: the server would not warm up", file=sys.stderr)
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="ctxlab-speed-"))
    log, env = tmp / "timing.log", {"CTXLAB_TIMING_LOG": str(tmp / "timing.log")}
    if args.fresh_cache:
        env["CTXLAB_CACHE"] = str(tmp / "cache")
    port = cl.free_port()
    try:
        proc = cl.start_server(args.app, port, wait_s=180, env=env)
    except RuntimeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    uri = f"ws://127.0.0.1:{port}/_stcore/stream"
    rows, load = [], []
    try:  # the first page run starts the warm-up; other sentences than the defaults measured below
        t0 = time.perf_counter()
        asyncio.run(cl.one_session(uri, cl.query_for("", 0, 99, args.lang), "", 1, args.timeout))
        waited = wait_warmup(log, args.warmup_wait)
        warm_s = round(time.perf_counter() - t0, 1)
        for name in wanted:
            load.append(cl.load_avg())
            rows.extend(asyncio.run(measure_page(uri, names[name], args.lang, log, args.timeout)))
    finally:
        cl.stop_server(proc)
    print(table(rows))
    print(
        json.dumps(
            {
                "rows": rows,
                "warmup_s": warm_s,
                "warmup_done": waited is not None,
                "warmup_steps_s": warmup_steps(log),
                "loadavg_per_page": load,
                "loadavg_end": cl.load_avg(),
                "fresh_cache": args.fresh_cache,
                "passed": sum(r["pass"] for r in rows),
                "of": len(rows),
            },
            ensure_ascii=False,
        )
    )
    return 0


def _file_order(path: str) -> str:
    return next((f.stem for f in sorted((cl.ROOT / "pages").glob("*.py")) if f.stem.endswith(path)), path)


if __name__ == "__main__":
    sys.exit(main())

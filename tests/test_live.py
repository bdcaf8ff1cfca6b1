"""ctxlib.live (training a small model live from the training page) and reading a checkpoint zip (checkpoint.unzip):
upload checks as --corpus, a short BERT run with its timeline, a cancelled run keeping its last save, the session
folder, and zips that are corrupt, traverse paths, hold other files or unpack too large."""

import io
import zipfile

import numpy as np
import pytest

import ctxlib
from ctxlib import checkpoint, corpus, live, live_files, live_results, replay, user_text
from ctxlib.models.bert import SPECIALS


class Cancelled(Exception):
    pass


class CancelAt:
    """A report callback that raises Cancelled (as the page's stop button does) at the n-th report that
    `counts(point, phase)` selects; `seen` is how many it has seen."""

    def __init__(self, n, counts):
        self.n, self.counts, self.seen = n, counts, 0

    def __call__(self, frac, point=None, phase=None):
        if self.counts(point, phase):
            self.seen += 1
            if self.seen == self.n:
                raise Cancelled()


@pytest.fixture
def short(monkeypatch):
    """Runs of a few seconds on 300 paragraphs of the train split, saved every 0.3 s."""
    monkeypatch.setattr(live, "BUDGET_MIN_S", 1)
    monkeypatch.setattr(live, "SAVE_EVERY_S", 0.3)
    monkeypatch.setattr(live, "REPORT_EVERY_S", 0.05)
    pars = corpus.load("all", "train")[:300]
    monkeypatch.setattr(live, "subset", lambda words, seed=0: pars)
    return pars


# -- uploads -------------------------------------------------------------------------------------------------------
def test_upload_checks_as_corpus_does(tmp_path, monkeypatch):
    assert live.check_upload("今天天气很好。\n我们去公园。\n".encode("utf-8")) == "utf-8-sig"
    assert live.check_upload("今天天气很好。\n".encode("gb18030")) == "gb18030"
    for data, code in (
        (b"", "empty"),
        (b"  \n\n", "empty"),
        (b"abc\x00def" * 10, "binary"),
        (bytes(range(1, 9)) * 50, "binary"),
        (b"\x80\xff\x80\xff" * 10, "encoding"),
    ):
        with pytest.raises(live.UploadError) as e:
            live.check_upload(data, "x.txt")
        assert e.value.code == code and str(e.value).startswith("x.txt: ")
    monkeypatch.setattr(user_text, "USER_FILE_CAP", 100)
    with pytest.raises(live.UploadError) as e:
        live.check_upload("好".encode() * 50, "big.txt")
    assert e.value.code == "too_big" and "over the 0 MB cap" in str(e.value)
    # what passes is written to the session folder and is a file `--corpus` accepts
    p = live.save_upload("第一行。\n第二行。\n".encode("gb18030"), tmp_path / "up", "mine.txt")
    files = user_text.user_files(p)
    assert p.parent == tmp_path / "up" and files == [(p, "gb18030")]
    assert list(user_text.iter_user_lines(files)) == ["第一行。", "第二行。"]


def test_spec_limits():
    live.LiveSpec("bert", 30)
    live.LiveSpec("word2vec", 180, corpus_file=None)
    for kw in (
        dict(kind="bert", budget_s=29),
        dict(kind="bert", budget_s=181),
        dict(kind="lstm"),
        dict(kind="gpt", corpus_file="x.txt"),
        dict(kind="bert", words=0),
    ):
        with pytest.raises(ValueError):
            live.LiveSpec(**kw)


def test_subset_holds_at_least_the_words_asked():
    pars = live.subset(5000, seed=1)
    n = sum(len(p.words) for p in pars)
    assert n >= 5000 and n - len(pars[-1].words) < 5000
    assert [(p.source, p.doc_id) for p in pars] == [(p.source, p.doc_id) for p in live.subset(5000, seed=1)]  # seeded


# -- runs ----------------------------------------------------------------------------------------------------------
def test_short_bert_run_records_a_timeline_and_zips(short, tmp_path, monkeypatch):
    monkeypatch.setitem(live.VOCAB_TOP, "bert", 300)  # the subset's 300 most frequent characters (the page: 1,200)
    points = []
    run = live.LiveRun(live.LiveSpec("bert", 3), tmp_path / "run")
    out = live.train(run.spec, run, lambda f, p=None, phase=None: points.append((f, p, phase)))
    assert out is run and run.state == "done" and run.loadable() and run.has_timeline()
    assert not (run.out / "resume.pt").exists()  # a live run is never resumed: its saves skip the trainer state
    # the 3 s budget is mostly spent training (wall_s counts training only: 2.5 s on a quiet CI machine)
    assert run.summary["steps"] > 0 and run.summary["wall_s"] >= 1.5 and run.first_step_s is not None
    pts = [p for _, p, _ in points if p]
    assert pts and all(set(p) == {"s", "step", "loss", "tokens", "tokens_s"} for p in pts)
    assert [p["step"] for p in pts] == sorted(p["step"] for p in pts) and pts[-1]["tokens_s"] > 0
    assert [ph for _, _, ph in points][0] == "data" and points[-1][2] == "save" and points[-1][0] == 1.0
    assert 0 <= min(f for f, _, _ in points) and max(f for f, _, _ in points) <= 1
    rp = replay.load(run.out)
    assert rp.kind == "bert" and rp.steps[0] == 0 and rp.steps[-1] == run.summary["steps"]
    assert "attention_0" in rp.arrays
    assert len(ctxlib.load(run.out).tokenizer) - len(SPECIALS) in range(300, 320)  # ~300 characters (ties kept)
    from ctxlib.training import bert

    assert not any(k.startswith("live-") for k in bert.PRESETS)  # the run's preset is passed, never registered
    assert run.summary["preset"] == run.summary["run"]["preset"] == f"live-{run.id}"
    # the download: a zip that ctxlib.load reads, with the same weights
    z = tmp_path / "run.zip"
    z.write_bytes(live_files.zip_bytes(run.out))
    assert sorted(zipfile.ZipFile(z).namelist()) == sorted(checkpoint.ZIP_MEMBERS)
    a, b = ctxlib.load(run.out), ctxlib.load(z)
    assert b.kind == "bert" and b.name == "run"
    va, vb = a.word_vectors(["苹果手机很好用"], "苹果"), b.word_vectors(["苹果手机很好用"], "苹果")
    assert np.allclose(va, vb)
    assert replay.load(z).steps == rp.steps  # the replay reads the zip too


def test_top_k_min_count_keeps_the_most_frequent_characters(short):
    from collections import Counter

    from ctxlib.models.bert import CharTokenizer
    from ctxlib.tokens import char_tokens, norm_token

    c = Counter(norm_token(t) for p in short for t, _, _ in char_tokens(p.text))
    for k in (1, 50, 300):
        mc = live.top_k_min_count(short, k)
        assert sum(n >= mc for n in c.values()) >= k > sum(n > mc for n in c.values())
        assert len(CharTokenizer.build(short, min_count=mc)) - len(SPECIALS) == sum(n >= mc for n in c.values())
    assert live.top_k_min_count(short, len(c) + 1) == 1  # fewer characters than asked: all kept


def test_cancel_keeps_the_last_save(short, tmp_path):
    report = CancelAt(40, lambda point, phase: bool(point))  # at the 40th point
    run = live.LiveRun(live.LiveSpec("gpt", 60), tmp_path / "run")
    with pytest.raises(Cancelled):
        live.train(run.spec, run, report)
    assert run.ended is not None and run.loadable() and run.has_timeline()
    rp = replay.load(run.out)
    assert rp.kind == "gpt" and len(rp.steps) >= 2 and rp.steps[-1] < 60 * live.STEPS_PER_S["gpt"]


def test_word2vec_run_and_its_nearest_words(short, tmp_path):
    pts = []
    run = live.LiveRun(live.LiveSpec("word2vec", 2), tmp_path / "w")
    live.train(run.spec, run, lambda f, p=None, phase=None: p and pts.append(p))
    assert run.state == "done" and run.loadable() and not run.has_timeline()
    assert pts and any(p["loss"] is not None for p in pts) and all(p["loss"] is None or p["loss"] > 0 for p in pts)
    near = live_results.nearest_words(run.out, words=("中国", "没有这个词"))
    assert list(near) == ["中国"] and len(near["中国"]) == 5 and all(w != "中国" for w, _ in near["中国"])


def test_cancelled_word2vec_keeps_the_vectors_trained_so_far(short, tmp_path):
    report = CancelAt(3, lambda point, phase: phase == "train")  # at the 3rd report of the training phase
    run = live.LiveRun(live.LiveSpec("word2vec", 60), tmp_path / "w")
    with pytest.raises(Cancelled):
        live.train(run.spec, run, report)
    assert report.seen == 3  # no report after the cancel (its save is not a phase the page waits on)
    assert run.ended is not None and run.loadable() and not run.has_timeline()
    s = run.summary
    assert s["stopped_early"] is True and 0 < s["tokens_seen"] < s["raw_words_per_epoch"] * 5  # before the 5 epochs
    kv = ctxlib.load(run.out).keyed_vectors
    assert len(kv.index_to_key) == s["vocab_size"] and np.isfinite(kv.vectors).all() and np.abs(kv.vectors).max() > 0
    assert "中国" in live_results.nearest_words(run.out, words=("中国",))


def test_live_saves_skip_resume_state_and_cli_saves_keep_it(short, tmp_path):
    from ctxlib.training import bert

    assert all(not p.resume_file for k, p in live.PRESETS.items() if k != "word2vec")  # word2vec saves once, at the end
    assert bert.PRESETS["long"].resume_file and bert.PRESETS["default"].resume_file
    out = bert.train("tiny", device="cpu", out=tmp_path / "cli", paragraphs=short[:100], steps=3)
    assert (out / "resume.pt").is_file()


def test_live_bert_reads_a_small_held_out_sample():
    from ctxlib.training import bert

    valid = corpus.load("corpora", "valid")
    assert bert._valid_paragraphs(bert.VALID_EXAMPLES) == valid  # the CLI runs' timeline: as before
    n = live.PRESETS["bert"].data["timeline_valid"]
    few = bert._valid_paragraphs(n)
    assert n < bert.VALID_EXAMPLES and len(few) == 8 * n < len(valid)
    ids = {(p.source, p.doc_id) for p in valid}
    assert all((p.source, p.doc_id) in ids for p in few) and {p.source for p in few} == {p.source for p in valid}
    assert bert._valid_paragraphs(n) == few  # the same sample every run (cached)


def test_live_gpt_reads_a_small_held_out_sample(short, tmp_path, monkeypatch):
    from ctxlib.models.bert import CharTokenizer
    from ctxlib.training import bert, gpt

    valid = corpus.load("corpora", "valid")
    assert gpt._valid_paragraphs(gpt.VALID_WINDOWS) == valid  # the CLI runs' timeline: the whole split, as before
    n = live.PRESETS["gpt"].data["timeline_valid"]
    few = gpt._valid_paragraphs(n)
    assert n < gpt.VALID_WINDOWS and few == list(bert.valid_sample(8 * n)) and len(few) == 8 * n < len(valid)
    # the first n windows, encoding only the paragraphs that hold them: the same windows as encoding them all
    tok = CharTokenizer.build(short, min_count=1)
    model = gpt.build_model(tok, dict(hidden=16, layers=1, heads=2, ffn=16, max_len=16))
    docs = gpt.encode_documents(valid[:400], tok)
    want = gpt.windows(docs, 16)[:n]
    batches, chars = gpt._valid_batches(model, tok, valid[:400], None, max_windows=n)
    assert chars == int((want[:, 2] - want[:, 1]).sum())
    got = sorted(tuple(r[r != -100].tolist()) for b in batches for r in b["labels"])
    assert got == sorted(tuple(docs[d][s:e].tolist()) for d, s, e in want)
    # a live GPT run asks for the sample, not the split
    asked = []
    monkeypatch.setattr(gpt, "_valid_paragraphs", lambda k: asked.append(k) or few)
    run = live.LiveRun(live.LiveSpec("gpt", 1), tmp_path / "run")
    live.train(run.spec, run, lambda *a, **k: None)
    assert asked == [n] and run.has_timeline()
    assert all(np.isfinite(s["valid_loss"]) for s in replay.load(run.out).data["snapshots"])


def test_head_formation_follows_the_heads_strongest_at_the_end(tmp_path):
    from test_replay import STEPS, write_timeline

    write_timeline(tmp_path / "b")  # tokens [CLS] 苹 果 好 [SEP]: 3 rows count, 2 of them with a previous character
    S, T = len(STEPS), 5
    a = np.full((S, 2, 2, T, T), 1 / T)
    for k in range(S):  # layer 2 head 1 moves onto the previous token, layer 1 head 2 onto the next one
        w = k / (S - 1)
        for i in range(1, T):
            a[k, 1, 0, i] = (1 - w) / T + w * np.eye(T)[i - 1]
        for i in range(T - 1):
            a[k, 0, 1, i] = (1 - w) / T + w * np.eye(T)[i + 1]
    with np.load(tmp_path / "b" / "timeline.npz") as z:
        arrays = {k: z[k] for k in z.files}
    np.savez_compressed(tmp_path / "b" / "timeline.npz", **{**arrays, "attention_0": a.astype(np.float16)})
    hf = live_results.head_formation(replay.load(tmp_path / "b"))
    assert (hf["prev"]["layer"], hf["prev"]["head"]) == (2, 1) and (hf["next"]["layer"], hf["next"]["head"]) == (1, 2)
    for m in ("prev", "next"):
        sh = hf[m]["shares"]
        assert len(sh) == S and sh == sorted(sh)
        assert sh[0] == pytest.approx(2 / 3 / T, abs=0.01) and sh[-1] == pytest.approx(2 / 3, abs=0.01)
    write_timeline(tmp_path / "e", kind="elmo", attention=False)
    assert live_results.head_formation(replay.load(tmp_path / "e")) is None
    write_timeline(tmp_path / "g", kind="gpt")
    assert list(live_results.head_formation(replay.load(tmp_path / "g"))) == ["prev"]  # causal: no next character


def test_head_verdict_says_formed_faded_or_forming():
    def hf(prev, nxt=None):
        out = {"prev": {"layer": 2, "head": 1, "shares": prev}}
        if nxt is not None:
            out["next"] = {"layer": 1, "head": 2, "shares": nxt}
        return out

    v = live_results.head_verdict(hf([0.06, 0.3, 0.55, 0.7], [0.06, 0.1, 0.2, 0.3]))
    assert (v["which"], v["layer"], v["head"], v["state"], v["first"], v["start"], v["end"], v["peak"]) == (
        "prev",
        2,
        1,
        "formed",
        2,
        0.06,
        0.7,
        0.7,
    )
    v = live_results.head_verdict(hf([0.06, 0.1, 0.2, 0.3], [0.05, 0.6, 0.4, 0.35]))
    assert (v["which"], v["state"], v["first"], v["peak"], v["end"]) == ("next", "faded", 1, 0.6, 0.35)
    v = live_results.head_verdict(hf([0.06, 0.1, 0.2, 0.49]))  # GPT: the previous character only
    assert (v["which"], v["state"], v["first"]) == ("prev", "forming", None)
    assert live_results.head_verdict(hf([0.06, 0.5]))["state"] == "formed"  # the threshold itself counts


# -- stale session folders -------------------------------------------------------------------------------------------
def _dead_pid() -> int:
    import subprocess
    import sys

    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def _folder(root, name, owner=None, age_h=0.0):
    import json
    import os
    import time

    d = root / f"{live_files.FOLDER_PREFIX}{name}"
    (d / "run-1").mkdir(parents=True)
    (d / "run-1" / "model.pt").write_bytes(b"x")
    if owner is not None:
        (d / live_files.OWNER_FILE).write_text(json.dumps(owner), encoding="utf-8")
    t = time.time() - age_h * 3600
    for f in (d / "run-1" / "model.pt", d / "run-1", *d.iterdir(), d):
        os.utime(f, (t, t))
    return d


def test_stale_folders_of_gone_processes_are_removed_and_no_others(tmp_path, monkeypatch):
    import os

    me = {"pid": os.getpid(), "start": live_files._process_start(os.getpid())}
    gone = {"pid": _dead_pid(), "start": 1}
    dead_old = _folder(tmp_path, "dead-old", gone, age_h=live_files.STALE_H + 1)
    no_owner_old = _folder(tmp_path, "noowner-old", None, age_h=live_files.STALE_H + 1)
    reused_pid = _folder(tmp_path, "reused", {**me, "start": (me["start"] or 0) + 12345}, age_h=live_files.STALE_H + 1)
    dead_recent = _folder(tmp_path, "dead-recent", gone, age_h=live_files.STALE_H - 1)
    mine_old = _folder(tmp_path, "mine-old", me, age_h=live_files.STALE_H + 10)  # an idle session of this server
    written_lately = _folder(tmp_path, "lately", gone, age_h=live_files.STALE_H + 1)
    (written_lately / "run-1" / "model.pt").write_bytes(b"y")  # a run wrote into it just now
    other = tmp_path / "not-ours"
    other.mkdir()
    (tmp_path / f"{live_files.FOLDER_PREFIX}a-file").write_text("x")
    removed = live_files.clean_stale(tmp_path)
    want = {dead_old, no_owner_old} | ({reused_pid} if me["start"] is not None else set())
    assert set(removed) == want and not any(d.exists() for d in want)
    assert all(d.exists() for d in (dead_recent, mine_old, written_lately, other))
    assert (tmp_path / f"{live_files.FOLDER_PREFIX}a-file").is_file()
    assert live_files.clean_stale(tmp_path, max_age_h=0.5) == [dead_recent]  # a shorter limit
    # a new session cleans (once per CLEAN_EVERY_S) and records itself as the owner of its folder
    monkeypatch.setattr(live_files, "_LAST_CLEAN", {})
    stale = _folder(tmp_path, "stale-again", gone, age_h=live_files.STALE_H + 1)
    sess = live_files.LiveSession(tmp_path)
    assert not stale.exists() and live_files._owner_alive(
        __import__("json").loads((sess.dir / live_files.OWNER_FILE).read_text())
    )
    again = _folder(tmp_path, "stale-later", gone, age_h=live_files.STALE_H + 1)
    live_files.LiveSession(tmp_path).close()
    assert again.exists()  # not before CLEAN_EVERY_S has passed
    assert live_files.clean_stale(tmp_path) == [again] and sess.dir.exists()
    sess.close()


def test_work_marks_a_failed_run_and_session_keeps_the_last_runs(short, monkeypatch, tmp_path):
    sess = live_files.LiveSession(tmp_path)

    class Job:
        def report(self, *a, **k):
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        live.make_work(sess, live.LiveSpec("word2vec", 2))(Job())
    assert sess.latest().state == "failed" and sess.dir.parent == tmp_path
    runs = []
    for _ in range(3):
        runs.append(sess.new_run(live.LiveSpec("word2vec", 2)))
        runs[-1].out.mkdir()
    assert (
        len(sess.runs) == live_files.MAX_RUNS
        and not runs[0].out.exists()
        and runs[1].out.exists()
        and runs[2].out.exists()
    )
    d = sess.dir
    sess.close()
    assert not d.exists()


# -- checkpoint zips -----------------------------------------------------------------------------------------------
@pytest.fixture
def w2v_dir(tmp_path):
    import torch

    from ctxlib.vocab import Vocab

    vocab = Vocab(["<unk>", "苹果", "手机"], [0, 5, 3])
    d = tmp_path / "w2v"
    checkpoint.save(d, "word2vec", {"dim": 4}, vocab.to_json(), {"in_vectors": torch.arange(12.0).reshape(3, 4)}, {})
    return d


def _zip(path, members: dict):
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def _members(d):
    return {f: (d / f).read_bytes() for f in ("config.json", "vocab.json", "model.pt")}


def test_zip_in_a_top_folder_loads(w2v_dir, tmp_path):
    z = _zip(tmp_path / "m.zip", {f"w2v/{k}": v for k, v in _members(w2v_dir).items()})
    enc = ctxlib.load(z)
    assert enc.kind == "word2vec" and enc.in_vocab("苹果")
    assert checkpoint.resolve(z) == checkpoint.resolve(z)  # unpacked once


@pytest.mark.parametrize("case", ["corrupt", "truncated", "traversal", "absolute", "pickle", "no_config", "bomb"])
def test_bad_zips_are_refused_clearly(case, w2v_dir, tmp_path, monkeypatch):
    z = tmp_path / f"{case}.zip"
    m = _members(w2v_dir)
    if case == "corrupt":
        z.write_bytes(b"PK\x03\x04 not really a zip")
    elif case == "truncated":
        _zip(z, m)
        z.write_bytes(z.read_bytes()[:200])
    elif case == "traversal":
        _zip(z, {**m, "../evil.json": b"{}"})
    elif case == "absolute":
        _zip(z, {**m, "/tmp/evil.json": b"{}"})
    elif case == "pickle":
        _zip(z, {**m, "resume.pt": b"pickle"})
    elif case == "no_config":
        _zip(z, {k: v for k, v in m.items() if k != "config.json"})
    else:
        _zip(z, {**m, "timeline.json": b"0" * 5_000_000})  # 5 MB of zeros pack to a few KiB
    with pytest.raises(checkpoint.CheckpointError) as e:
        ctxlib.load(z)
    assert str(e.value).startswith(f"{z.resolve()} is corrupt or not a checkpoint zip (")
    assert "python -m ctxlib train" in str(e.value)
    assert not (tmp_path.parent / "evil.json").exists() and not (tmp_path / "evil.json").exists()


def test_zip_size_cap(w2v_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(checkpoint, "ZIP_MAX_BYTES", 100)
    z = _zip(tmp_path / "big.zip", _members(w2v_dir))
    with pytest.raises(checkpoint.CheckpointError, match="unpacks too large"):
        ctxlib.load(z)


def test_zip_bytes_leave_out_resume_state(w2v_dir):
    (w2v_dir / "resume.pt").write_bytes(b"optimizer state")
    names = zipfile.ZipFile(io.BytesIO(live_files.zip_bytes(w2v_dir))).namelist()
    assert sorted(names) == ["config.json", "model.pt", "vocab.json"]


def test_word2vec_trains_on_an_uploaded_gb18030_file(short, tmp_path):
    text = "今天天气很好，我们去公园散步吧。\n苹果手机很好用，就是价格有点贵。\n他在银行存了一笔钱。\n" * 200
    path = live.save_upload(text.encode("gb18030"), tmp_path / "up", "mine.txt")
    run = live.LiveRun(live.LiveSpec("word2vec", 2, corpus_file=path), tmp_path / "w")
    live.train(run.spec, run, lambda *a, **k: None)
    assert not user_text.UserSentences(user_text.user_files(path)).path.exists()  # no copy left in the cache
    enc = ctxlib.load(run.out)
    assert run.state == "done" and enc.in_vocab("苹果") and not enc.in_vocab("中国")  # its words, not the corpus's

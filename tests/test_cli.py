import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ctxlib import checkpoint
from ctxlib.cli import main

REPO = Path(__file__).resolve().parent.parent


def _lines(tmp_path, text):
    f = tmp_path / "in.txt"
    f.write_text(text, encoding="utf-8")
    return str(f)


def test_embed_writes_npz(w2v_tiny, tmp_path, capsys):
    out = tmp_path / "v.npz"
    src = _lines(tmp_path, "我喜欢吃苹果\n\n苹果手机很好用\n苹果树\n")
    assert main(["embed", "--model", str(w2v_tiny), "--word", "苹果", "--input", src, "--out", str(out)]) == 0
    z = np.load(out, allow_pickle=False)
    assert z["vectors"].shape == (3, 1, 32) and z["vectors"].dtype == np.float32
    assert list(z["layer_names"]) == ["type vector (word2vec)"]
    assert list(z["sentences"]) == ["我喜欢吃苹果", "苹果手机很好用", "苹果树"]
    np.testing.assert_array_equal(z["vectors"][0], z["vectors"][2])


def test_embed_reads_stdin(w2v_tiny, tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO("苹果很甜\n".encode("gb18030"))))
    out = tmp_path / "s.npz"
    assert main(["embed", "--model", str(w2v_tiny), "--word", "苹果", "--input", "-", "--out", str(out)]) == 0
    assert np.load(out)["vectors"].shape == (1, 1, 32)


@pytest.mark.parametrize(
    "text,word,model,pattern",
    [
        ("苹果很甜\n今天天气很好\n", "苹果", None, r"line 2 does not contain '苹果'"),
        ("\n\n苹果很甜\n我爱苹果\n\n没有水果\n", "苹果", None, r"line 6 does not contain"),
        ("龘靐很甜\n我爱龘靐\n", "龘靐", None, r"'龘靐' is not in the .* vocabulary"),
        ("苹果很甜\n", "苹果", "no_such_model", r"cannot load model 'no_such_model'.*python -m ctxlib train"),
        ("\n \n", "苹果", None, r"empty"),
    ],
)
def test_embed_user_errors_exit_2_with_one_line(w2v_tiny, tmp_path, capsys, text, word, model, pattern):
    out = tmp_path / "v.npz"
    rc = main(
        [
            "embed",
            "--model",
            model or str(w2v_tiny),
            "--word",
            word,
            "--input",
            _lines(tmp_path, text),
            "--out",
            str(out),
        ]
    )
    err = capsys.readouterr().err.strip()
    assert rc == 2 and not out.exists()
    assert len(err.splitlines()) == 1 and err.startswith("error: ")
    assert __import__("re").search(pattern, err), err


def test_embed_missing_input_file(w2v_tiny, tmp_path, capsys):
    rc = main(
        [
            "embed",
            "--model",
            str(w2v_tiny),
            "--word",
            "苹果",
            "--input",
            str(tmp_path / "no.txt"),
            "--out",
            str(tmp_path / "o.npz"),
        ]
    )
    assert rc == 2 and "not found" in capsys.readouterr().err and not (tmp_path / "o.npz").exists()


def test_embed_end_to_end_subprocess(w2v_tiny, tmp_path):
    src = _lines(tmp_path, "苹果很甜\n我爱苹果\n")
    out = tmp_path / "p.npz"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "ctxlib",
            "embed",
            "--model",
            str(w2v_tiny),
            "--word",
            "苹果",
            "--input",
            src,
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert np.load(out, allow_pickle=False)["vectors"].shape == (2, 1, 32)
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "ctxlib",
            "embed",
            "--model",
            str(w2v_tiny),
            "--word",
            "梨",
            "--input",
            src,
            "--out",
            str(tmp_path / "q.npz"),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=120,
    )
    assert r.returncode == 2 and "line 1" in r.stderr and not (tmp_path / "q.npz").exists()


def test_info_json(w2v_tiny, monkeypatch, capsys):
    monkeypatch.setattr(checkpoint, "CHECKPOINT_DIR", Path(w2v_tiny).parent)
    assert main(["info", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    [m] = info["models"]
    assert m["name"] == "word2vec" and m["kind"] == "word2vec" and m["config"]["dim"] == 32
    assert m["summary"]["tokens_seen"] > 0 and m["summary"]["wall_s"] >= 0
    assert info["missing"] == {k: f"python -m ctxlib train {k}" for k in ("elmo", "bert", "gpt")}
    assert main(["info"]) == 0
    assert "python -m ctxlib train bert" in capsys.readouterr().out


def test_corpus_command(capsys):
    assert main(["corpus", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    by = {(r["source"], r["split"]): r for r in rows}
    for src in ("pd", "reviews"):
        parts = sum(by[(src, s)]["words"] for s in ("train", "valid", "test"))
        assert parts == by[(src, "all")]["words"] > 0
    assert by[("pd", "all")]["paragraphs"] == 19484
    assert main(["corpus"]) == 0
    assert "distinct_words" in capsys.readouterr().out


def test_train_unknown_preset_is_an_error(tmp_path, capsys):
    assert main(["train", "word2vec", "--preset", "huge", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown preset 'huge'" in err[0] and "tiny" in err[0]
    assert not (tmp_path / "x").exists()


def test_eval_senses_writes_three_held_out_sets(w2v_tiny, tmp_path, capsys):
    out = tmp_path / "senses.json"
    assert main(["eval", str(w2v_tiny), "--task", "senses", "--out", str(out)]) == 0
    r = json.loads(out.read_text())
    assert set(r["sets"]) == {"examples", "supplement", "frozen"}
    sup = r["sets"]["supplement"]
    assert sup["words"] >= 42 and len(sup["accuracy"]) == 1 and sup["pair_ranking"] == [0.5]  # one vector per type
    assert "per_word" in sup and "per_word" not in json.loads(capsys.readouterr().out)["sets"]["supplement"]


def test_eval_cloze_needs_a_masked_lm(w2v_tiny, tmp_path, capsys):
    assert main(["eval", str(w2v_tiny), "--task", "cloze", "--out", str(tmp_path / "c.json")]) == 2
    assert "masked LM" in capsys.readouterr().err
    assert not (tmp_path / "c.json").exists()


def test_train_options_for_other_kinds_exit_2(tmp_path, capsys):
    assert main(["train", "word2vec", "--amp", "bf16", "--out", str(tmp_path / "w")]) == 2
    assert main(["train", "word2vec", "--resume", str(tmp_path)]) == 2
    assert main(["train", "bert", "--resume", str(tmp_path / "nothing")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and all(e.startswith("error: ") for e in err)


def test_init_from_mistakes_exit_2_with_what_to_do(tmp_path, capsys):
    """--init-from's mistakes: no run there, another kind, no --out, --out = the source, --steps not beyond the
    source's, together with --resume, for word2vec. Each is one line saying what to do; nothing is trained."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "config.json").write_text(
        json.dumps({"kind": "bert", "config": {}, "summary": {"steps": 100, "run": {"preset": "tiny", "seed": 0}}})
    )
    cases = [
        (["--init-from", str(tmp_path / "none"), "--out", str(tmp_path / "o"), "--steps", "200"], "config.json"),
        (
            ["--init-from", str(src), "--out", str(tmp_path / "o"), "--steps", "200", "--kind-elmo"],
            "of kind bert; train elmo --init-from needs",
        ),
        (["--init-from", str(src), "--steps", "200"], "needs --out"),
        (["--init-from", str(src), "--out", str(src), "--steps", "200"], "new folder"),
        (["--init-from", str(src), "--out", str(tmp_path / "o")], "--steps 2100"),
        (["--init-from", str(src), "--out", str(tmp_path / "o"), "--steps", "100"], "beyond it"),
        (["--init-from", str(src), "--resume", str(src), "--out", str(tmp_path / "o"), "--steps", "200"], "give one"),
    ]
    for extra, want in cases:
        kind = "elmo" if "--kind-elmo" in extra else "bert"
        assert main(["train", kind, *[a for a in extra if a != "--kind-elmo"]]) == 2, extra
        [line] = capsys.readouterr().err.strip().splitlines()
        assert line.startswith("error: ") and want in line, (extra, line)
    assert main(["train", "word2vec", "--init-from", str(src), "--out", str(tmp_path / "o")]) == 2
    assert "--init-from" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


# -- every command against the pages' bad inputs (issue #14, part 6): exit 0 or 2, never a traceback ----------------
BAD_TEXT = {
    "empty": "",
    "missing": "今天天气很好",
    "unseen": "龘靐",
    "5000": "苹果" * 2500,
    "html": "<script>alert(1)</script>苹果",
    "control": "苹果\x07\x1b[31m很\x7f甜",
}
BAD_FILE = {
    "gb18030": "苹果很甜\n我爱苹果\n".encode("gb18030"),
    "binary": b"\x00\x01PK\x03\x04" * 50,
    "empty": b"",
    "control": ("苹果" + "\x07\x1b" * 20 + "\n").encode(),
}


def _text_cases():
    for k, t in BAD_TEXT.items():
        yield k, ["corpus", "--word", t]
        yield k, ["fill-mask", t]
        yield k, ["fill-mask", t + "[MASK]"]
        yield k, ["fill-mask", "[MASK]" + t, "--model", "gpt"]
        yield k, ["generate", t]
        yield k, ["generate", t, "--model", "bert"]
        yield k, ["embed", "--model", "word2vec", "--word", "苹果", "--input", f"<text:{k}>", "--out", "<out>"]
        yield k, ["embed", "--model", "bert", "--word", t, "--input", "<text:html>", "--out", "<out>"]
    for k in BAD_FILE:
        yield f"file-{k}", ["embed", "--model", "elmo", "--word", "苹果", "--input", f"<file:{k}>", "--out", "<out>"]
        yield f"file-{k}", ["train", "word2vec", "--corpus", f"<file:{k}>"]  # no --out: stops before training
    for k in ("model.pt", "config.json"):
        for c in (
            ["embed", "--model", "<bad>", "--word", "苹果", "--input", "<file:gb18030>", "--out", "<out>"],
            ["eval", "<bad>", "--task", "senses", "--out", "<out>"],
            ["eval", "<bad>", "--task", "pos", "--out", "<out>"],
            ["fill-mask", "今天[MASK]", "--model", "<bad>"],
            ["generate", "今天", "--model", "<bad>"],
            ["train", "bert", "--resume", "<bad>"],
        ):
            yield f"corrupt-{k}", [a.replace("<bad>", f"<bad:{k}>") for a in c]
    yield "info", ["info"]
    for k in ("0", "-3"):
        yield f"topk{k}", ["fill-mask", "[MASK]", "--topk", k]


@pytest.fixture(scope="module")
def shipped_once():
    """The shipped checkpoints, each loaded once for this module (the cases only need them to be real models)."""
    import functools

    from ctxlib import encoder

    if not all((checkpoint.CHECKPOINT_DIR / m / "config.json").is_file() for m in ("word2vec", "elmo", "bert", "gpt")):
        pytest.skip("needs the shipped checkpoints (python -m ctxlib train <kind>)")
    real = encoder.load
    cached = functools.lru_cache(maxsize=None)(real)
    mp = pytest.MonkeyPatch()
    mp.setattr(
        encoder, "load", lambda name: cached(name) if name in ("word2vec", "elmo", "bert", "gpt") else real(name)
    )
    yield
    mp.undo()


@pytest.mark.parametrize("kind,argv", list(_text_cases()), ids=lambda v: v if isinstance(v, str) else v[0])
def test_every_command_on_bad_input_exits_0_or_2_with_one_line(shipped_once, tmp_path, capsys, kind, argv):
    import shutil

    def fill(a: str) -> str:
        if a.startswith("<text:"):
            f = tmp_path / "t.txt" if a != "<text:html>" else tmp_path / "html.txt"
            f.write_text(BAD_TEXT[a[6:-1]] + "\n", encoding="utf-8")
            return str(f)
        if a.startswith("<file:"):
            (f := tmp_path / f"f_{a[6:-1]}.txt").write_bytes(BAD_FILE[a[6:-1]])
            return str(f)
        if a.startswith("<bad:"):
            if not (d := tmp_path / "bad").exists():
                shutil.copytree(checkpoint.CHECKPOINT_DIR / "word2vec", d)
                (d / a[5:-1]).write_bytes(b"PK\x03\x04 truncated" if a.endswith("pt>") else b"{not json")
            return str(d)
        return str(tmp_path / "out") if a == "<out>" else a

    rc = main([fill(a) for a in argv])  # an uncaught exception fails the test: that is the traceback
    err = capsys.readouterr().err.strip()
    assert rc in (0, 2), (rc, err)
    if rc == 2:
        assert len(err.splitlines()) == 1 and err.startswith("error: "), err
        assert len(err) < 400 and "\x1b" not in err and "\x07" not in err, err  # user text shortened and escaped
        assert not (tmp_path / "out").exists()


def test_fill_mask_over_long_text_subprocess():
    """The reported case: 200+ tokens through the real entry point exit 2 with one line, no traceback."""
    if not (checkpoint.CHECKPOINT_DIR / "bert" / "config.json").is_file():
        pytest.skip("checkpoints/bert missing: python -m ctxlib train bert")
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    r = subprocess.run(
        [sys.executable, "-m", "ctxlib", "fill-mask", "今天天气很[MASK]" + "好" * 250, "--model", "bert"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=120,
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    [line] = r.stderr.strip().splitlines()
    assert line.startswith("error: the text is 256 tokens long; fill-mask takes at most"), line


@pytest.mark.parametrize("text, note", [("我今天很高[MASK]", True), ("我今天很高[MASK]。", False)])
def test_fill_mask_notes_a_mask_at_the_very_end(tiny_bert, capsys, monkeypatch, text, note):
    """Nothing after the last [MASK]: a note on stderr says why 。 comes first and what to add; stdout stays JSON."""
    import ctxlib.encoder

    monkeypatch.setattr(ctxlib.encoder, "load", lambda name: tiny_bert)
    assert main(["fill-mask", text, "--model", "bert"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)[0]["candidates"]
    assert ("End the text with 。" in err) == note, err

"""`--corpus FILE_OR_DIR`: a user's text streamed from disk (empty, binary, GB18030, bigger than the read cap)."""

import json
import tracemalloc

import numpy as np
import pytest
import torch

from ctxlib import corpus, user_text
from ctxlib.cli import main
from ctxlib.models.bert import CharTokenizer
from ctxlib.training.bert_batches import StreamPretrainBatches

LINES = [
    "今天天气很好，我们去公园散步。",
    "苹果手机的电池不太耐用。",
    "妈妈在市场买了一斤苹果。",
    "他每天早上喝一杯牛奶。",
    "这家酒店的服务很周到，房间也干净。",
    "我们明天上午九点在学校门口见面。",
]


def _write(path, lines, encoding="utf-8", repeat=1):
    path.write_text("\n".join(lines * repeat) + "\n", encoding=encoding)
    return path


def test_bad_files_get_one_clear_error(tmp_path):
    (tmp_path / "empty.txt").write_text("  \n\n")
    (tmp_path / "bin.dat").write_bytes(bytes(range(256)) * 50)
    (tmp_path / "latin.txt").write_bytes("caf\xe9 ".encode("latin-1") * 10 + b"\xff\xfe\xfa")
    with pytest.raises(corpus.CorpusError, match="empty"):
        user_text.user_files(tmp_path / "empty.txt")
    with pytest.raises(corpus.CorpusError, match="binary"):
        user_text.user_files(tmp_path / "bin.dat")
    with pytest.raises(corpus.CorpusError, match="not found"):
        user_text.user_files(tmp_path / "missing.txt")
    (tmp_path / "d").mkdir()
    with pytest.raises(corpus.CorpusError, match="no files"):
        user_text.user_files(tmp_path / "d")


def test_gb18030_and_folders_stream_the_same_lines(tmp_path):
    _write(tmp_path / "u.txt", LINES)
    (tmp_path / "d").mkdir()
    _write(tmp_path / "d" / "a.txt", LINES[:3], "gb18030")
    _write(tmp_path / "d" / "b.txt", LINES[3:])
    (tmp_path / "d" / ".hidden").write_bytes(b"\x00\x01")  # hidden files are skipped
    a = list(user_text.iter_user_lines(user_text.user_files(tmp_path / "u.txt")))
    files = user_text.user_files(tmp_path / "d")
    assert [e for _, e in files] == ["gb18030", "utf-8-sig"]
    assert list(user_text.iter_user_lines(files)) == a == [corpus.nfkc(s) for s in LINES]


def test_a_file_over_the_read_cap_streams_in_little_memory(tmp_path, monkeypatch):
    big = _write(tmp_path / "big.txt", LINES, repeat=20000)  # ~2.6 MB
    monkeypatch.setattr(user_text, "USER_FILE_CAP", 1 << 20)
    with pytest.raises(corpus.CorpusError, match="cap"):
        user_text.read_text_file(big, cap=user_text.USER_FILE_CAP)  # the in-memory reader refuses it
    files = user_text.user_files(big)
    tracemalloc.start()
    n = sum(1 for _ in user_text.iter_user_lines(files))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert n == 6 * 20000
    assert peak < big.stat().st_size / 20  # never the whole file in memory


def test_stream_batches_cover_the_lines_and_resume_exactly(tmp_path):
    f = _write(tmp_path / "c.txt", [f"{s}第{i}句。" for i in range(40) for s in LINES[:1]], "gb18030")
    files = user_text.user_files(f)
    tok = CharTokenizer.build(
        (user_text.user_paragraph(ln, i, words=False) for i, ln in enumerate(user_text.iter_user_lines(files))),
        min_count=1,
    )
    a = StreamPretrainBatches(files, tok, 4, 32, seed=1, pool=2, buffer=16)
    it = iter(a)
    for _ in range(7):
        next(it)
    st = a.state_dict()
    want = [next(it) for _ in range(6)]
    b = StreamPretrainBatches(files, tok, 4, 32, seed=1, pool=2, buffer=16)
    b.load_state_dict(st)
    got = [x for x, _ in zip(iter(b), range(6))]
    for x, y in zip(got, want):
        assert torch.equal(x["ids"], y["ids"]) and torch.equal(x["mlm_labels"], y["mlm_labels"])
    # two ranks read disjoint lines
    r0 = StreamPretrainBatches(files, tok, 4, 32, rank=0, world=2, buffer=8)
    r1 = StreamPretrainBatches(files, tok, 4, 32, rank=1, world=2, buffer=8)
    lines0 = {p.doc_id for _, buf in r0._buffers(0) for p in buf}
    lines1 = {p.doc_id for _, buf in r1._buffers(0) for p in buf}
    assert lines0 and lines1 and not lines0 & lines1 and len(lines0 | lines1) == 40


@pytest.mark.parametrize("kind", ["word2vec", "bert", "elmo"])
def test_cli_trains_on_a_gb18030_corpus(kind, tmp_path, capsys):
    torch.set_num_threads(1)
    f = _write(tmp_path / "gb.txt", [f"{s}{i}" for i in range(60) for s in LINES], "gb18030")
    out = tmp_path / kind
    assert main(["train", kind, "--preset", "tiny", "--corpus", str(f), "--out", str(out)]) == 0
    cfg = json.loads((out / "config.json").read_text())
    import ctxlib

    enc = ctxlib.load(out)
    v = enc.word_vectors(["苹果手机的电池不太耐用。"], "苹果")
    assert np.isfinite(v).all()
    if kind != "word2vec":
        assert cfg["summary"]["run"]["corpus"] == str(f)


@pytest.mark.parametrize(
    "setup, msg",
    [
        (lambda p: p.write_text(""), "empty"),
        (lambda p: p.write_bytes(b"\x00\x01\x02" * 100), "binary"),
        (lambda p: None, "not found"),
    ],
)
def test_cli_bad_corpus_exits_2_with_one_line(setup, msg, tmp_path, capsys):
    f = tmp_path / "c.txt"
    setup(f)
    assert main(["train", "bert", "--preset", "tiny", "--corpus", str(f), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and msg in err[0]
    assert not (tmp_path / "o").exists()


def test_cli_corpus_needs_out(tmp_path, capsys):
    f = _write(tmp_path / "c.txt", LINES)
    assert main(["train", "word2vec", "--corpus", str(f)]) == 2
    assert "--out" in capsys.readouterr().err


def test_corpus_word_counts_per_source_split_and_sense(capsys):
    assert main(["corpus", "--word", "苹果", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    by = {(r["source"], r["sense"]): r for r in rows}
    assert by[("supplement", "品牌")]["train"] >= 80 and by[("pd", None)]["train"] > 0
    assert main(["corpus", "--word", "  "]) == 2

import json
from pathlib import Path

import pytest
import torch

from ctxlib import checkpoint
from ctxlib.checkpoint import CheckpointError


def _save(d, kind="word2vec"):
    sd = {"w": torch.randn(4, 3), "ids": torch.arange(5)}
    checkpoint.save(d, kind, {"dim": 3}, {"itos": ["a", "b"]}, sd, {"steps": 7})
    return sd


def test_round_trip(tmp_path):
    sd = _save(tmp_path / "m")
    cfg, vocab, got = checkpoint.load(tmp_path / "m")
    assert cfg == {"kind": "word2vec", "config": {"dim": 3}, "summary": {"steps": 7}}
    assert vocab == {"itos": ["a", "b"]}
    assert got["w"].dtype == torch.float32 and got["ids"].dtype == torch.int64
    torch.testing.assert_close(got["w"], sd["w"].half().float())  # stored as fp16
    assert torch.equal(got["ids"], sd["ids"])
    raw = torch.load(tmp_path / "m" / "model.pt", weights_only=True)
    assert raw["w"].dtype == torch.float16


def test_atomic_writes_leave_no_temp_files(tmp_path, monkeypatch):
    _save(tmp_path / "m")
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == ["config.json", "model.pt", "vocab.json"]
    target = tmp_path / "m" / "vocab.json"
    before = target.read_bytes()

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(checkpoint.os, "replace", boom)
    with pytest.raises(OSError):
        checkpoint.atomic_write_bytes(target, b"half-written")
    assert target.read_bytes() == before
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == ["config.json", "model.pt", "vocab.json"]


def test_missing_checkpoint_names_file_and_command(tmp_path):
    with pytest.raises(CheckpointError, match=r"config\.json missing.*python -m ctxlib train"):
        checkpoint.load(tmp_path / "nothing")


@pytest.mark.parametrize(
    "name,data,pattern",
    [
        ("config.json", b"{not json", r"config\.json is corrupt.*python -m ctxlib train"),
        ("config.json", b'{"config": {}}', r"config\.json is corrupt.*python -m ctxlib train"),
        ("vocab.json", b"\xff\xfe garbage", r"vocab\.json is corrupt.*python -m ctxlib train word2vec"),
        ("model.pt", b"PK\x03\x04 truncated zip", r"model\.pt is corrupt.*python -m ctxlib train word2vec"),
    ],
)
def test_corrupt_files_raise_checkpoint_error(tmp_path, name, data, pattern):
    _save(tmp_path / "word2vec")
    (tmp_path / "word2vec" / name).write_bytes(data)
    with pytest.raises(CheckpointError, match=pattern):
        checkpoint.load(tmp_path / "word2vec")


@pytest.mark.parametrize("name", ["vocab.json", "model.pt"])
def test_missing_files_raise_checkpoint_error(tmp_path, name):
    _save(tmp_path / "m")
    (tmp_path / "m" / name).unlink()
    with pytest.raises(
        CheckpointError, match=rf"{name.replace('.', '[.]')} is missing.*python -m ctxlib train word2vec"
    ):
        checkpoint.load(tmp_path / "m")


def test_state_dict_that_is_not_a_dict(tmp_path):
    _save(tmp_path / "m", kind="elmo")
    torch.save(torch.zeros(3), tmp_path / "m" / "model.pt")
    with pytest.raises(CheckpointError, match=r"model\.pt.*python -m ctxlib train elmo"):
        checkpoint.load(tmp_path / "m")


def test_mismatched_state_dict_names_both_files(tmp_path):
    checkpoint.save(
        tmp_path / "m", "bert", {"hidden": 4}, {}, {"weight": torch.zeros(2, 4), "bias": torch.zeros(2)}, {}
    )
    _, _, sd = checkpoint.load(tmp_path / "m")
    model = torch.nn.Linear(5, 2)
    with pytest.raises(CheckpointError, match=r"model\.pt does not match .*config\.json.*python -m ctxlib train bert"):
        checkpoint.load_state_into(model, sd, tmp_path / "m")
    checkpoint.load_state_into(torch.nn.Linear(4, 2), sd, tmp_path / "m")  # the right shape loads


def test_resolve_and_available(tmp_path, monkeypatch):
    monkeypatch.setattr(checkpoint, "CHECKPOINT_DIR", tmp_path)
    assert checkpoint.available() == []
    _save(tmp_path / "word2vec")
    (tmp_path / "half").mkdir()  # no config.json: not a checkpoint
    assert checkpoint.available() == ["word2vec"]
    assert checkpoint.resolve("word2vec") == tmp_path / "word2vec"
    assert checkpoint.resolve(tmp_path / "x") == tmp_path / "x"
    assert json.loads((tmp_path / "word2vec" / "config.json").read_text(encoding="utf-8"))["kind"] == "word2vec"


class _Planted:
    """An object whose unpickling runs code (here: makes a folder); a weights-only load must never run it."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        import os

        return (os.mkdir, (self.marker,))


def test_load_refuses_pickled_objects_in_model_pt(tmp_path):
    _save(tmp_path / "m", kind="bert")
    marker = tmp_path / "code-ran"
    torch.save({"w": torch.zeros(2), "x": _Planted(marker)}, tmp_path / "m" / "model.pt")
    with pytest.raises(CheckpointError, match=r"model\.pt is corrupt or not a state dict.*python -m ctxlib train bert"):
        checkpoint.load(tmp_path / "m")
    assert not marker.exists()  # the pickled call was never made


def test_save_writes_config_last(tmp_path, monkeypatch):
    written = []
    real = checkpoint.atomic_write_bytes

    def record(path, data):
        written.append(Path(path).name)
        real(path, data)

    monkeypatch.setattr(checkpoint, "atomic_write_bytes", record)
    _save(tmp_path / "m")
    assert written[-1] == "config.json" and written.index("model.pt") < written.index("config.json")
    assert sorted(written) == ["config.json", "model.pt", "vocab.json"]

    # a crash while writing the weights of a new checkpoint leaves no config.json: the folder is not a checkpoint
    def fail_on_weights(path, data):
        if Path(path).name == "model.pt":
            raise OSError("disk full")
        real(path, data)

    monkeypatch.setattr(checkpoint, "atomic_write_bytes", fail_on_weights)
    with pytest.raises(OSError):
        _save(tmp_path / "new")
    assert not (tmp_path / "new" / "config.json").exists()


def test_saved_files_are_readable_by_others(tmp_path):
    import os
    import stat

    old = os.umask(0o022)  # a normal umask; mkstemp alone would give 0600
    try:
        _save(tmp_path / "m")
        checkpoint.atomic_write_json(tmp_path / "export.json", {"a": 1})
    finally:
        os.umask(old)
    for p in [*(tmp_path / "m").iterdir(), tmp_path / "export.json"]:
        mode = stat.S_IMODE(p.stat().st_mode)
        assert mode & 0o044 == 0o044, (p.name, oct(mode))


# -- issue #17, item 4: what the mutation run showed untested ---------------------------------------------------------


def test_rebuild_command_and_resolve(tmp_path, monkeypatch):
    assert checkpoint.rebuild_command("elmo") == "python -m ctxlib train elmo"
    assert (
        checkpoint.rebuild_command(None)
        == checkpoint.rebuild_command("lstm")
        == "python -m ctxlib train word2vec|elmo|bert|gpt"
    )
    monkeypatch.setattr(checkpoint, "CHECKPOINT_DIR", tmp_path / "ckpts")
    monkeypatch.chdir(tmp_path)
    assert checkpoint.resolve("bert") == tmp_path / "ckpts" / "bert"  # a bare name: a folder under checkpoints/
    assert checkpoint.resolve("runs/bert") == Path("runs/bert")  # a relative path (two parts), even before it exists
    assert checkpoint.resolve(tmp_path / "nowhere") == tmp_path / "nowhere"  # absolute, not existing
    (tmp_path / "here").mkdir()
    assert checkpoint.resolve("here") == Path("here")  # an existing folder in the working directory


def test_atomic_write_bytes_makes_folders_and_writes_beside_the_target(tmp_path, monkeypatch):
    import os
    import stat

    seen = []
    real = os.replace
    monkeypatch.setattr(os, "replace", lambda a, b: (seen.append((Path(a), Path(b))), real(a, b)))
    target = tmp_path / "a" / "b" / "out.json"
    old = os.umask(0o027)  # even a strict umask: 0644 exactly
    try:
        checkpoint.atomic_write_bytes(target, b"xyz")
    finally:
        os.umask(old)
    assert target.read_bytes() == b"xyz" and stat.S_IMODE(target.stat().st_mode) == 0o644
    ((tmp, dst),) = seen
    assert dst == target and tmp.parent == target.parent  # same folder: the rename is atomic
    assert tmp.name.startswith("out.json.") and tmp.name.endswith(".tmp") and not tmp.exists()


def test_atomic_write_json_is_readable_utf8(tmp_path):
    checkpoint.atomic_write_json(tmp_path / "v.json", {"词": ["苹果", 1]})
    assert (tmp_path / "v.json").read_bytes() == '{\n "词": [\n  "苹果",\n  1\n ]\n}'.encode("utf-8")


def test_save_into_nested_and_existing_folders(tmp_path):
    d = tmp_path / "x" / "y" / "m"
    _save(d)
    _save(d)  # again, over the old one
    assert checkpoint.load(d)[0]["kind"] == "word2vec"


def test_messages_name_the_fix(tmp_path):
    with pytest.raises(CheckpointError, match=r"Build one with: python -m ctxlib train gpt$"):
        checkpoint.read_config(tmp_path / "gpt")
    with pytest.raises(CheckpointError, match=r"Build one with: python -m ctxlib train word2vec\|elmo\|bert\|gpt$"):
        checkpoint.read_config(tmp_path / "mine")
    (tmp_path / "elmo").mkdir()
    (tmp_path / "elmo" / "config.json").write_text('{"kind": "elmo"}', encoding="utf-8")
    with pytest.raises(
        CheckpointError,
        match=r"is corrupt \(missing 'kind' or 'config'\)\. Rebuild it with: "
        r"python -m ctxlib train elmo$",
    ):
        checkpoint.read_config(tmp_path / "elmo")
    _save(tmp_path / "m", kind="bert")
    torch.save([1, 2], tmp_path / "m" / "model.pt")  # loads, but is no state dict
    with pytest.raises(
        CheckpointError,
        match=r"corrupt or not a state dict \(ValueError\)\. Rebuild with: "
        r"python -m ctxlib train bert$",
    ):
        checkpoint.load(tmp_path / "m")


def test_load_state_into_is_strict_and_names_both_files(tmp_path):
    _save(tmp_path / "m", kind="elmo")
    model = torch.nn.Linear(2, 2)
    checkpoint.load_state_into(model, {"weight": torch.ones(2, 2), "bias": torch.zeros(2)}, tmp_path / "m")
    assert torch.equal(model.weight, torch.ones(2, 2))
    with pytest.raises(CheckpointError) as err:  # a key missing: strict loading refuses it
        checkpoint.load_state_into(model, {"weight": torch.ones(2, 2)}, tmp_path / "m")
    assert str(err.value) == (
        f"{tmp_path / 'm' / 'model.pt'} does not match {tmp_path / 'm' / 'config.json'} "
        f"(Error(s) in loading state_dict for Linear:). Rebuild with: python -m ctxlib train elmo"
    )

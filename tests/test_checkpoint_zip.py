"""checkpoint.unzip, the checkpoint zips the training page downloads and reads, on a tiny checkpoint (no model is
built): which members and paths are refused (other names, paths escaping the folder, links, duplicates, two top
folders), the size and ratio caps at their exact edges, damaged data, the folder it unpacks to, unpacking once per
file, and cleaning up. Added for issue #17, item 4 (mutation testing)."""

import io
import os
import stat
import warnings
import zipfile

import pytest
import torch

from ctxlib import checkpoint
from ctxlib.checkpoint import CheckpointError


@pytest.fixture(autouse=True)
def _fresh(tmp_path, monkeypatch):
    """Each test: its own unpack cache and temporary folder (so what unzip leaves behind can be listed)."""
    monkeypatch.setattr(checkpoint, "_UNZIPPED", {})
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(checkpoint.tempfile, "tempdir", str(tmp))
    monkeypatch.setattr(checkpoint.atexit, "register", lambda f: None)


@pytest.fixture
def members(tmp_path):
    d = tmp_path / "src"
    checkpoint.save(d, "word2vec", {"dim": 2}, {"itos": ["<unk>", "苹果"]}, {"w": torch.arange(4.0).reshape(2, 2)}, {})
    return {f: (d / f).read_bytes() for f in ("config.json", "vocab.json", "model.pt")}


def _zip(path, entries, compress=zipfile.ZIP_STORED):
    """entries: {name: bytes} or a list of (name or ZipInfo, bytes) (duplicates allowed)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns on a duplicate name
        with zipfile.ZipFile(path, "w", compression=compress) as zf:
            for name, data in entries.items() if isinstance(entries, dict) else entries:
                zf.writestr(name, data)
    return path


def _unpacked(tmp_path):
    return sorted(p.name for p in (tmp_path / "tmp").iterdir())


def _refused(z, why):
    with pytest.raises(CheckpointError) as e:
        checkpoint.unzip(z)
    assert str(e.value) == (
        f"{z.resolve()} is corrupt or not a checkpoint zip ({why}). Download it again, or rebuild "
        f"with: python -m ctxlib train word2vec|elmo|bert|gpt"
    )


def test_a_good_zip_unpacks_to_a_folder_named_after_it(members, tmp_path):
    z = _zip(tmp_path / "run.zip", members)
    out = checkpoint.unzip(z)
    assert out.name == "run" and out.parent.parent == tmp_path / "tmp" and out.parent.name.startswith("ctxlab-zip-")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == members
    cfg, vocab, sd = checkpoint.load(z)
    assert (
        cfg["kind"] == "word2vec"
        and vocab["itos"] == ["<unk>", "苹果"]
        and torch.equal(sd["w"], torch.arange(4.0).reshape(2, 2))
    )


@pytest.mark.parametrize(
    "file,folder",
    [
        ("my model (2).zip", "my_model__2_"),
        ("模型.zip", "模型"),
        (".hidden.zip", "hidden"),
        ("....zip", "checkpoint"),
        (".Xrun-1.zip", "Xrun-1"),
        ("a" * 80 + ".zip", "a" * 64),
    ],
)
def test_the_folder_name_is_the_files_stem_made_safe(members, tmp_path, file, folder):
    assert checkpoint.unzip(_zip(tmp_path / file, members)).name == folder


def test_one_top_folder_is_allowed(members, tmp_path):
    out = checkpoint.unzip(_zip(tmp_path / "m.zip", {f"w2v/{k}": v for k, v in members.items()}))
    assert sorted(p.name for p in out.iterdir()) == sorted(members)


@pytest.mark.parametrize(
    "entries,why",
    [
        # every member under "..": stripping the one top folder would leave allowed names
        (lambda m: {f"../{k}": v for k, v in m.items()}, "unexpected member '../config.json'"),
        (lambda m: {f"/{k}": v for k, v in m.items()}, "unexpected member '/config.json'"),  # absolute
        (lambda m: {f"a\\b/{k}": v for k, v in m.items()}, "unexpected member 'a\\\\b/config.json'"),  # a Windows path
        (
            lambda m: {"a/config.json": m["config.json"], "b/vocab.json": m["vocab.json"]},
            "unexpected member 'a/config.json'",
        ),
        (
            lambda m: {"w/config.json": m["config.json"], "w/x/vocab.json": m["vocab.json"]},
            "unexpected member 'w/config.json'",
        ),
        (lambda m: {**m, "resume.pt": b"optimizer state"}, "unexpected member 'resume.pt'"),
        (lambda m: [*m.items(), ("config.json", b"{}")], "unexpected member 'config.json'"),  # a duplicate
        (lambda m: {k: v for k, v in m.items() if k != "config.json"}, "no config.json"),
    ],
    ids=["dotdot", "absolute", "backslash", "two_tops", "nested", "other_name", "duplicate", "no_config"],
)
def test_members_other_than_a_checkpoints_are_refused(members, tmp_path, entries, why):
    z = _zip(tmp_path / "bad.zip", entries(members))
    _refused(z, why)
    assert _unpacked(tmp_path) == [] and not (tmp_path / "config.json").exists()


def test_a_link_is_refused(members, tmp_path):
    link = zipfile.ZipInfo("timeline.json")
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    _refused(_zip(tmp_path / "link.zip", [*members.items(), (link, b"/etc/passwd")]), "'timeline.json' is a link")
    plain = zipfile.ZipInfo("timeline.json")
    plain.external_attr = (stat.S_IFREG | 0o644) << 16
    assert (
        checkpoint.unzip(_zip(tmp_path / "ok.zip", [*members.items(), (plain, b"[]")])) / "timeline.json"
    ).read_bytes() == b"[]"


def test_size_cap_counts_all_members_together_at_its_exact_edge(members, tmp_path, monkeypatch):
    z = _zip(tmp_path / "m.zip", members)
    total = sum(map(len, members.values()))
    monkeypatch.setattr(checkpoint, "ZIP_MAX_BYTES", total)
    assert checkpoint.unzip(z).is_dir()  # exactly the cap: allowed
    monkeypatch.setattr(checkpoint, "_UNZIPPED", {})
    monkeypatch.setattr(checkpoint, "ZIP_MAX_BYTES", total - 1)  # one byte over, though every member alone fits
    _refused(z, "'model.pt' unpacks too large")


def test_ratio_cap_at_its_exact_edge(members, tmp_path, monkeypatch):
    monkeypatch.setattr(checkpoint, "ZIP_MAX_RATIO", 2)  # a member may unpack to 2 x max(packed, 1 KiB)
    ok = _zip(tmp_path / "ok.zip", [*members.items()])
    with zipfile.ZipFile(ok, "a", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("timeline.json", b"0" * 2048)  # packs to a few bytes: 2048 = 2 x 1024, allowed
    assert (checkpoint.unzip(ok) / "timeline.json").stat().st_size == 2048
    bomb = _zip(tmp_path / "bomb.zip", [*members.items()])
    with zipfile.ZipFile(bomb, "a", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("timeline.json", b"0" * 2049)
    _refused(bomb, "'timeline.json' unpacks too large")


def test_damaged_data_is_refused_and_leaves_nothing(members, tmp_path):
    z = _zip(tmp_path / "m.zip", members)
    data = bytearray(z.read_bytes())
    at = data.index(members["vocab.json"])  # stored: the member's bytes stand in the file as they are
    data[at + 3] ^= 0xFF
    z.write_bytes(bytes(data))
    _refused(z, "BadZipFile: Bad CRC-32 for file 'vocab.json'")
    assert _unpacked(tmp_path) == []  # the half-unpacked folder is removed


def test_not_a_zip_and_no_file(tmp_path):
    z = tmp_path / "x.zip"
    z.write_bytes(b"not a zip at all")
    _refused(z, "BadZipFile: File is not a zip file")
    with pytest.raises(CheckpointError) as e:
        checkpoint.unzip(tmp_path / "none.zip")
    assert str(e.value) == f"No checkpoint at {tmp_path / 'none.zip'} (FileNotFoundError)."


def test_a_member_longer_than_its_header_is_refused(members, tmp_path, monkeypatch):
    """zipfile itself stops at the header's size; unzip counts again, should a reader ever hand over more."""
    z = _zip(tmp_path / "m.zip", members)
    real = zipfile.ZipFile.open

    def longer(self, info, *a, **k):
        src = real(self, info, *a, **k)
        return io.BytesIO(src.read() + b"and more") if getattr(info, "filename", info) == "vocab.json" else src

    monkeypatch.setattr(zipfile.ZipFile, "open", longer)
    _refused(z, "'vocab.json' is longer than its header says")
    assert _unpacked(tmp_path) == []


def test_unpacked_once_per_file_and_again_when_it_changes_or_its_folder_is_gone(members, tmp_path):
    a, b = _zip(tmp_path / "a.zip", members), _zip(tmp_path / "b.zip", members)
    os.utime(b, ns=(a.stat().st_atime_ns, a.stat().st_mtime_ns))  # same bytes, same size, same time: still two files
    out_a, out_b = checkpoint.unzip(a), checkpoint.unzip(b)
    assert (out_a.name, out_b.name) == ("a", "b") and checkpoint.unzip(a) == out_a and len(_unpacked(tmp_path)) == 2
    (out_a / "config.json").unlink()  # its temporary folder was cleaned up under it
    again = checkpoint.unzip(a)
    assert (again / "config.json").read_bytes() == members["config.json"]
    _zip(b, {**members, "timeline.json": b"[]"})  # rewritten
    assert (checkpoint.unzip(b) / "timeline.json").is_file()


def test_unpacked_folders_are_removed_at_exit_once_registered(members, tmp_path, monkeypatch):
    registered = []
    monkeypatch.setattr(checkpoint.atexit, "register", registered.append)
    out_a = checkpoint.unzip(_zip(tmp_path / "a.zip", members))
    assert registered == [checkpoint._remove_unzipped]  # at the first unpack (a session may open only one zip)
    out_b = checkpoint.unzip(_zip(tmp_path / "b.zip", members))
    checkpoint.unzip(_zip(tmp_path / "c.zip", members))
    assert registered == [checkpoint._remove_unzipped]  # and only then
    import shutil

    shutil.rmtree(out_a.parent)  # something else removed one already: the rest is still cleaned, without an error
    checkpoint._remove_unzipped()
    assert not out_b.parent.exists() and _unpacked(tmp_path) == []  # a, b and c


def test_resolve_unzips_only_zip_files(members, tmp_path):
    f = tmp_path / "model.pt"
    f.write_bytes(members["model.pt"])
    assert checkpoint.resolve(f) == f  # a plain file is a path, not a zip
    with pytest.raises(CheckpointError, match=r"config\.json missing"):
        checkpoint.read_config(f)
    z = _zip(tmp_path / "M.ZIP", members)
    assert checkpoint.resolve(z).name == "M" and checkpoint.resolve(tmp_path / "gone.zip") == tmp_path / "gone.zip"


def test_a_long_load_error_is_cut_to_its_first_300_characters(tmp_path):
    checkpoint.save(tmp_path / "m", "elmo", {}, {}, {"weight": torch.zeros(2, 2)}, {})
    long_name = type("M" * 400, (torch.nn.Linear,), {})  # the error's first line names the class
    with pytest.raises(CheckpointError) as e:
        checkpoint.load_state_into(long_name(2, 2), {"weight": torch.zeros(2, 2)}, tmp_path / "m")
    first = ("Error(s) in loading state_dict for " + "M" * 400)[:300]
    assert f"({first}). Rebuild with:" in str(e.value)

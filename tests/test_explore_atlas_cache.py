"""The atlas sample on disk (explore_atlas._atlas_cached, through ctxlib.cache): a fresh process reads it back without
encoding, equal in every field; each input of the sample (checkpoint, model, word, seed, total, the occurrences) has
its own entry; an entry with the wrong contents is computed afresh; no checkpoint folder, nothing stored. Added for
issue #17, item 4: the mutation run showed this path untested by test_explore.py."""

import json

import app_fakes
import numpy as np
import pytest

from ctxlib import cache, corpus, explore_atlas
from ctxlib.corpus import Occurrence


class Counting(app_fakes.FakeEncoder):
    """A fake BERT-like character model at a checkpoint folder, counting the texts it encodes."""

    def __init__(self, path, name="bert"):
        super().__init__("bert", 3, chars=True)
        self.path, self.name, self.encoded = path, name, 0

    def encode_tokens(self, batch, texts):
        self.encoded += len(texts)
        return super().encode_tokens(batch, texts)


OCC = [
    Occurrence("我吃苹果", 2, 4, "n", "pd", "train"),
    Occurrence("苹果手机很好用", 0, 2, None, "reviews", "train"),
    Occurrence("他买了苹果和香蕉", 3, 5, "n", "pd", "train"),
]


@pytest.fixture
def setup(tmp_path, monkeypatch):
    monkeypatch.setenv("CTXLAB_CACHE", str(tmp_path / "cache"))
    d = tmp_path / "ckpt" / "bert"
    d.mkdir(parents=True)
    (d / "config.json").write_text(json.dumps({"kind": "bert", "config": {}}), encoding="utf-8")
    (d / "model.pt").write_bytes(b"weights v1")
    state = {"occ": list(OCC), "total": 7}
    monkeypatch.setattr(corpus, "occurrences", lambda word, cap, seed: (state["occ"][:cap], state["total"]))
    return d, state, tmp_path / "cache" / "atlas"


def _same(a, b):
    for f in ("texts", "spans", "tags", "sources", "total", "contexts", "layer_names"):
        assert getattr(a, f) == getattr(b, f), f
    assert all(type(s) is tuple for s in b.spans) and type(b.total) is int
    for f in ("vecs", "base"):
        assert getattr(b, f).dtype == np.float32 and np.array_equal(getattr(a, f), getattr(b, f)), f


def test_a_fresh_process_reads_the_sample_back_without_encoding(setup):
    d, _, folder = setup
    first = Counting(d)
    a = explore_atlas.atlas_sample(first, "苹果", cap=3, seed=0)
    assert first.encoded == 3 and len(list(folder.glob("*.npz"))) == 1
    fresh = Counting(d)
    b = explore_atlas.atlas_sample(fresh, "苹果", cap=3, seed=0)
    assert fresh.encoded == 0
    _same(a, b)
    assert b.texts == [o.text for o in OCC] and b.total == 7 and b.tags == ["n", None, "n"]


@pytest.mark.parametrize(
    "change", ["seed", "word", "total", "text", "tag", "source", "span", "name", "kind", "retrain"]
)
def test_each_input_of_the_sample_has_its_own_entry(setup, change):
    d, state, folder = setup
    explore_atlas.atlas_sample(Counting(d), "苹果", cap=3, seed=0)
    enc, word, seed = Counting(d), "苹果", 0
    if change == "seed":
        seed = 1
    elif change == "word":
        word = "苹"  # the same sentences (the fake corpus ignores the word)
    elif change == "total":
        state["total"] = 8
    elif change in ("text", "tag", "source", "span"):
        o = state["occ"][1]
        state["occ"][1] = Occurrence(
            *{
                "text": ("苹果手机很好看", 0, 2, None, "reviews", "train"),
                "tag": ("苹果手机很好用", 0, 2, "nz", "reviews", "train"),
                "source": ("苹果手机很好用", 0, 2, None, "weibo", "train"),
                "span": ("苹果手机很好用", 0, 1, None, "reviews", "train"),
            }[change]
        )
        assert o != state["occ"][1]
    elif change == "name":
        enc = Counting(d, name="bert-2")
    elif change == "kind":
        enc.kind = "elmo"
    else:
        (d / "model.pt").write_bytes(b"retrained weights")
    got = explore_atlas.atlas_sample(enc, word, cap=3, seed=seed)
    assert enc.encoded == 3 and len(list(folder.glob("*.npz"))) == 2
    if change == "total":
        assert got.total == 8
    if change == "tag":
        assert got.tags == ["n", "nz", "n"]


def test_an_entry_with_the_wrong_contents_is_computed_afresh(setup):
    d, _, folder = setup
    a = explore_atlas.atlas_sample(Counting(d), "苹果", cap=3, seed=0)
    (entry,) = folder.glob("*.npz")
    arrays, data = cache.load("atlas", entry.stem)
    del data["texts"]
    assert cache.save("atlas", entry.stem, arrays, data)
    again = Counting(d)
    _same(a, explore_atlas.atlas_sample(again, "苹果", cap=3, seed=0))
    assert again.encoded == 3


def test_no_checkpoint_folder_nothing_stored(setup):
    _, _, folder = setup
    enc = Counting(None)
    explore_atlas.atlas_sample(enc, "苹果", cap=3, seed=0)
    explore_atlas.atlas_sample(enc, "苹果", cap=3, seed=0)
    assert enc.encoded == 6 and not list(folder.glob("*.npz"))

"""The disk cache for derived data (ctxlib.cache) and what uses it: vocabulary type vectors, task features, atlas
samples, the parsed corpus; and the server's background warm-up."""

import json
import os
import sys

import app_fakes
import numpy as np
import pytest

from ctxlib import cache, explore_atlas


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("CTXLAB_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _checkpoint(tmp_path, name="elmo"):
    d = tmp_path / "ckpt" / name
    d.mkdir(parents=True)
    (d / "config.json").write_text(json.dumps({"kind": name, "dim": 16}))
    (d / "model.pt").write_bytes(b"weights v1")
    return d


class Counting(app_fakes.FakeEncoder):
    """A fake contextual encoder at a checkpoint folder, counting the texts it encodes."""

    def __init__(self, path, n_layers=3):
        super().__init__("elmo", n_layers)
        self.path, self.encoded = path, 0

    def encode_tokens(self, batch, texts):
        self.encoded += len(texts)
        return super().encode_tokens(batch, texts)


def test_cached_hit_and_json_part(tmp_path):
    calls = []

    def build():
        calls.append(1)
        return {"x": np.arange(6, dtype=np.float32).reshape(2, 3), "w": np.array(["苹果", "手机"])}, {
            "n": 2,
            "名": "值",
        }

    a1, d1 = cache.cached("demo", cache.key("a", 1), build)
    a2, d2 = cache.cached("demo", cache.key("a", 1), build)
    assert len(calls) == 1 and d1 == d2 == {"n": 2, "名": "值"}
    assert np.array_equal(a1["x"], a2["x"]) and a2["w"].tolist() == ["苹果", "手机"]
    cache.cached("demo", cache.key("a", 2), build)  # another key: built again
    assert len(calls) == 2
    cache.cached("demo", None, build)  # no key: nothing stored, built every time
    assert len(calls) == 3


def test_corrupt_entry_is_removed_and_rebuilt(_cache_dir):
    k = cache.key("corrupt")
    cache.save("demo", k, {"x": np.ones(3)})
    path = _cache_dir / "demo" / f"{k}.npz"
    path.write_bytes(path.read_bytes()[:40])  # cut short
    assert cache.load("demo", k) is None and not path.exists()
    arrays, _ = cache.cached("demo", k, lambda: ({"x": np.zeros(2)}, None))
    assert arrays["x"].tolist() == [0.0, 0.0] and cache.load("demo", k) is not None
    jp = _cache_dir / "corpus" / "j.json"
    jp.parent.mkdir(parents=True)
    jp.write_text("{not json")
    assert cache.load_json("corpus", "j") is None and not jp.exists()


def test_no_pickles(_cache_dir):
    assert not cache.save("demo", "obj", {"x": np.array([{"a": 1}], dtype=object)})  # would need a pickle: not stored
    assert not list((_cache_dir / "demo").glob("*.npz")) and cache.load("demo", "obj") is None


def test_unwritable_dir_falls_back_to_temp(tmp_path, monkeypatch):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("CTXLAB_CACHE", str(blocker / "cache"))  # cannot be created under a file
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    d = cache.cache_dir()
    assert d.parent == tmp_path / "tmp" and d.is_dir()
    assert cache.save("demo", "k", {"x": np.ones(2)}) and cache.load("demo", "k") is not None


def test_nothing_writable_is_no_error(tmp_path, monkeypatch):
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    monkeypatch.setenv("CTXLAB_CACHE", str(blocker / "cache"))
    monkeypatch.setattr("tempfile.tempdir", str(blocker / "tmp"))
    arrays, _ = cache.cached("demo", "k", lambda: ({"x": np.ones(2)}, None))  # built, not stored, no exception
    assert arrays["x"].tolist() == [1.0, 1.0]


def test_checkpoint_key_changes_with_the_checkpoint(tmp_path):
    d = _checkpoint(tmp_path)
    k1 = cache.checkpoint_key(d)
    assert k1 == cache.checkpoint_key(d)
    (d / "model.pt").write_bytes(b"weights v2, retrained")
    k2 = cache.checkpoint_key(d)
    (d / "config.json").write_text(json.dumps({"kind": "elmo", "dim": 16, "steps": 2}))
    assert len({k1, k2, cache.checkpoint_key(d)}) == 3
    assert cache.checkpoint_key(tmp_path / "missing") is None


def test_type_matrix_from_disk_equals_computed_and_retrain_invalidates(tmp_path):
    d = _checkpoint(tmp_path)
    first = Counting(d)
    words, M = first.type_matrix(10)
    assert first.encoded == 10
    fresh = Counting(d)  # a new server process: the same checkpoint, nothing in memory
    words2, M2 = fresh.type_matrix(10)
    assert fresh.encoded == 0 and words2 == words and np.array_equal(M, M2) and M2.dtype == np.float32
    (d / "model.pt").write_bytes(b"retrained weights")
    again = Counting(d)
    again.type_matrix(10)
    assert again.encoded == 10  # a retrained checkpoint: computed afresh
    assert Counting(None).type_matrix(10)[0] == words  # no checkpoint folder: computed, not stored


def test_task_features_from_disk_equal_computed(tmp_path):
    from ctxlib.evaluation import tasks

    d = _checkpoint(tmp_path)
    sents = [["我", "吃", "苹果"], ["他", "用", "手机", "了"], ["好吃"]]
    enc = Counting(d)
    f1 = tasks._disk_features(enc, sents, "pd")
    enc2 = Counting(d)
    f2 = tasks._disk_features(enc2, sents, "pd")
    assert enc.encoded == 3 and enc2.encoded == 0
    assert [f.shape for f in f2] == [(3, 3, 16), (4, 3, 16), (1, 3, 16)] and f2[0].dtype == np.float16
    assert all(np.array_equal(a, b) for a, b in zip(f1, f2))
    enc3 = Counting(d)
    tasks._disk_features(enc3, sents[:2], "pd")  # other sentences: another entry
    assert enc3.encoded == 2


def test_atlas_sample_from_disk_equals_computed(tmp_path):
    from ctxlib.corpus import Occurrence

    d = _checkpoint(tmp_path)
    occ = [
        Occurrence("我吃苹果了", 2, 4, "n", "pd", "train"),
        Occurrence("苹果手机很好", 0, 2, None, "reviews", "test"),
        Occurrence("他买苹果", 2, 4, "n", "pd", "train"),
    ]
    enc = Counting(d)
    a = explore_atlas._atlas_cached(enc, "苹果", occ, 7, 0)
    enc2 = Counting(d)
    b = explore_atlas._atlas_cached(enc2, "苹果", occ, 7, 0)
    assert enc.encoded == 3 and enc2.encoded == 0
    assert np.array_equal(a.vecs, b.vecs) and np.array_equal(a.base, b.base)
    assert (a.texts, a.spans, a.tags, a.sources, a.total, a.contexts, a.layer_names) == (
        b.texts,
        b.spans,
        b.tags,
        b.sources,
        b.total,
        b.contexts,
        b.layer_names,
    )
    assert b.tags[1] is None and b.spans[0] == (2, 4)


def test_corpus_json_cache_round_trips(monkeypatch, _cache_dir):
    from ctxlib import corpus

    pars = (
        corpus.Paragraph("supplement", 0, ["我", "吃", "苹果"], sense=("苹果", "fruit")),
        corpus.Paragraph("supplement", 1, ["苹果", "公司"], sense=("苹果", "company")),
    )
    calls = []

    def build():
        calls.append(1)
        return pars

    loader = corpus._disk_cached("supplement", build)
    assert loader() == pars
    loader.cache_clear()
    assert loader() == pars and len(calls) == 1  # read back from disk: equal paragraphs, splits included
    for f in (_cache_dir / "corpus").glob("*.json"):
        f.write_text('{"version": 1, "data": [[1, 2]]}')  # malformed rows
    loader.cache_clear()
    assert loader() == pars and len(calls) == 2


def test_warmup_without_umap_or_models_does_not_raise(monkeypatch):
    from ctxlib.app import loaders, warmup

    monkeypatch.setitem(sys.modules, "umap", None)  # import umap raises ImportError
    warmup.umap_warm()

    def broken(*a, **k):
        raise RuntimeError("no corpus here")

    monkeypatch.setattr("ctxlib.corpus.load", broken)
    _fresh_task_memory(monkeypatch)
    monkeypatch.setattr(loaders, "try_load", lambda m: (None, "missing"))
    import gc

    gc.unfreeze()
    times = warmup.warm(models=["elmo"])
    assert set(times) >= {"corpus", "optimizer", "umap", "gc_freeze"}
    assert gc.get_freeze_count() > 1000  # what was alive is out of the collector's full passes
    gc.unfreeze()
    assert "torch._dynamo" in sys.modules  # imported by the warm-up's optimizer step, not by the first live job
    monkeypatch.setenv("CTXLAB_NO_PREWARM", "1")
    assert warmup.start() is None


def _fresh_task_memory(monkeypatch):
    """The warm-up draws the task samples and features into tasks' process-wide memory; with a fake corpus those
    would be empty, and later tests (the live mix, fine-tuning) would get the empty sample."""
    from ctxlib.evaluation import tasks

    monkeypatch.setattr(tasks, "_SAMPLES", {})
    monkeypatch.setattr(tasks, "_FEATURES", {})


def test_warmup_fills_the_nearest_words_cache(tmp_path, monkeypatch):
    from ctxlib.app import loaders, warmup

    monkeypatch.setitem(sys.modules, "umap", None)
    monkeypatch.setattr("ctxlib.corpus.load", lambda *a, **k: [])
    _fresh_task_memory(monkeypatch)
    enc = Counting(_checkpoint(tmp_path))
    monkeypatch.setattr(loaders, "try_load", lambda m: (enc, None) if m == "bert" else (None, "missing"))
    warmup.warm(models=["bert", "gpt"])
    assert enc.encoded == len(enc.vocab_words(loaders.NEAREST_VOCAB))
    assert Counting(enc.path).type_matrix(loaders.NEAREST_VOCAB)[0] == enc.vocab_words()  # on disk now


def test_serving_threads(monkeypatch):
    from ctxlib.app import warmup

    monkeypatch.setenv("CTXLAB_TORCH_THREADS", "3")
    assert warmup.serving_threads() == 3
    monkeypatch.setenv("CTXLAB_TORCH_THREADS", "lots")
    assert 1 <= warmup.serving_threads() <= 4
    assert os.environ.get("NUMBA_CACHE_DIR")  # set (if it was not) before anything imports numba


def test_prune_keeps_the_newest(monkeypatch, _cache_dir):
    monkeypatch.setitem(cache.MAX_ENTRIES, "demo", 2)
    for i in range(4):
        cache.save("demo", f"k{i}", {"x": np.full(2, i)})
        os.utime(_cache_dir / "demo" / f"k{i}.npz", (1000 + i, 1000 + i))
    cache.prune("demo")
    assert sorted(f.name for f in (_cache_dir / "demo").iterdir()) == ["k2.npz", "k3.npz"]


def test_frozen_figure_dict_made_once_and_never_changed():
    import plotly.graph_objects as go

    from ctxlib.viz.common import freeze, scale_fonts

    fig = go.Figure(go.Scatter(x=[1, 2], y=[3, 4]), layout={"title": {"text": "t", "font": {"size": 10}}})
    want = fig.to_dict()
    frozen = freeze(fig)
    assert frozen.to_dict() is frozen.to_dict() and frozen.to_dict() == want
    big = scale_fonts(frozen, 1.5)  # presentation mode works on a copy
    assert big["layout"]["title"]["font"]["size"] == 15 and frozen.to_dict() == want


def test_numba_disk_cache_gives_uncached_jitted_functions_a_disk_cache(tmp_path, monkeypatch):
    """umap declares its hot functions without cache=True, so every server process compiled them again (~40 s of
    CPU holding the GIL while a class arrived); projection.numba_disk_cache gives them numba's disk cache."""
    numba = pytest.importorskip("numba")
    from numba.core.caching import NullCache

    from ctxlib import projection

    src = tmp_path / "ctxlab_nbtest_mod.py"
    src.write_text(
        "import numba\n\n@numba.njit\ndef twice(x):\n    return 2 * x\n\n"
        "@numba.njit\ndef thrice(x):\n    return 3 * x\n\n@numba.njit(cache=True)\ndef own(x):\n    return x\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path / "nbcache"))
    import ctxlab_nbtest_mod as mod

    monkeypatch.setitem(sys.modules, "ctxlab_nbtest_mod", mod)
    assert mod.thrice(1) == 3  # compiled before: left alone (its code is already in memory)
    assert isinstance(mod.twice._cache, NullCache)
    assert projection.numba_disk_cache(("ctxlab_nbtest_mod",)) == 1
    assert not isinstance(mod.twice._cache, NullCache) and isinstance(mod.thrice._cache, NullCache)
    assert mod.twice(21) == 42
    assert list((tmp_path / "nbcache").rglob("*twice*.nbi"))  # the compiled code went to the disk cache
    assert projection.numba_disk_cache(("ctxlab_nbtest_mod",)) == 0  # once only
    assert projection.numba_disk_cache(("no_such_prefix_x",)) == 0

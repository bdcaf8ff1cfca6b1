import math

import numpy as np
import pytest
import torch

import ctxlib
from ctxlib import checkpoint
from ctxlib.encoder import WordNotFound
from ctxlib.models.word2vec import KeyedVectors, Word2VecConfig, Word2VecEncoder
from ctxlib.training.word2vec import fit, pos_agreement

# -- SGNS details against hand-written references ---------------------------------------------
from ctxlib.training.word2vec_sgd import _windows, keep_probabilities, negative_table


def test_keep_probabilities_match_gensim_formula():
    counts = [5000, 400, 30, 2]
    got = keep_probabilities(np.array(counts), 1e-3)
    t = 1e-3 * sum(counts)  # gensim: threshold_count = sample * retained words
    for c, p in zip(counts, got):
        ref = min(1.0, (math.sqrt(c / t) + 1) * t / c)
        assert p == pytest.approx(ref, rel=1e-12)
    assert got[0] < 0.1 and got[-1] == 1.0  # frequent words are dropped most, rare ones never
    assert np.all(keep_probabilities(np.array(counts), 0.0) == 1.0)


def test_negative_table_follows_unigram_to_the_075():
    counts = np.array([1000, 100, 10, 1])
    table = negative_table(counts, 0.75, size=200_000)
    share = np.bincount(table, minlength=4) / len(table)
    ref = counts**0.75 / (counts**0.75).sum()
    np.testing.assert_allclose(share, ref, atol=2e-5)
    assert share[3] > counts[3] / counts.sum()  # the exponent lifts rare words


@pytest.mark.parametrize("kw", [{"sg": True}, {"sg": False}, {"sg": True, "shared_negatives": False}])
def test_training_draws_negatives_from_the_unigram_075_table(monkeypatch, kw):
    """The negatives fed to the updates follow count^0.75, neither uniform nor the raw unigram distribution."""
    from ctxlib.training import word2vec as w2v

    drawn = []

    class Recording(w2v.SGNS):
        def step_windows(self, center, ctx, valid, neg, *a, **k):
            drawn.append(neg.reshape(-1).numpy().copy())
            return super().step_windows(center, ctx, valid, neg, *a, **k)

        def step_pairs(self, center, ctx, neg, *a, **k):
            drawn.append(neg.reshape(-1).numpy().copy())
            return super().step_pairs(center, ctx, neg, *a, **k)

    monkeypatch.setattr(w2v, "SGNS", Recording)
    rng = np.random.default_rng(3)
    words = [f"w{r}" for r in range(1, 21)]
    zipf = 1 / np.arange(1, 21)
    sents = [list(rng.choice(words, size=8, p=zipf / zipf.sum())) for _ in range(300)]
    cfg = Word2VecConfig(dim=8, window=2, epochs=1, min_count=1, sample=0, batch_size=32, negative=5, **kw)
    fit(sents, cfg, device="cpu", progress=False, backend="torch")  # the numba kernel draws from the same table
    counts = np.array(w2v.build_vocab(sents, cfg).counts, dtype=np.float64)
    neg = np.concatenate(drawn)
    assert len(neg) > 5000
    share = np.bincount(neg, minlength=len(counts)) / len(neg)
    ref = counts**0.75 / (counts**0.75).sum()
    assert np.abs(share - ref).max() < 0.015, (share.round(3), ref.round(3))  # sd of a share here <= 0.007
    # what the bound tells apart: uniform draws and the raw unigram distribution are both far off
    assert np.abs(1 / len(counts) - ref).max() > 0.05 and np.abs(counts / counts.sum() - ref).max() > 0.05


def test_windows_stay_in_sentence_and_shrink():
    ids = np.arange(20)
    sid = np.repeat([0, 1, 2], [8, 5, 7])
    seen = {}
    for center, ctx, valid in _windows(ids, sid, 0, 20, 4, np.random.default_rng(0)):
        e = ctx.shape[1] // 2
        assert 1 <= e <= 4
        for c, row, ok in zip(center, ctx, valid):
            got = set(row[ok].tolist())
            assert c not in got
            assert all(sid[j] == sid[c] and abs(j - c) <= e for j in got)
            ref = {j for j in range(20) if j != c and sid[j] == sid[c] and abs(j - c) <= e}
            assert got == ref
            seen[c] = e
    assert sorted(seen) == list(range(20))
    assert len(set(seen.values())) > 1  # the window really is drawn per center word


def test_config_rejects_bad_values():
    for bad in ({"dim": 0}, {"sample": 1.5}, {"min_lr": 0.1}, {"min_count": 0}, {"negative": 0}):
        with pytest.raises(ValueError):
            Word2VecConfig(**bad)


# -- KeyedVectors against numpy -------------------------------------------------------------------
@pytest.fixture
def kv():
    rng = np.random.default_rng(1)
    return KeyedVectors([f"w{i}" for i in range(50)], rng.normal(size=(50, 8)).astype(np.float32))


def test_keyed_vectors_api_matches_numpy(kv):
    m = kv.vectors / np.linalg.norm(kv.vectors, axis=1, keepdims=True)
    assert "w3" in kv and "zz" not in kv and len(kv) == 50 and kv.index_to_key[3] == "w3"
    np.testing.assert_array_equal(kv["w3"], kv.vectors[3])
    assert kv.similarity("w1", "w2") == pytest.approx(float(m[1] @ m[2]), abs=1e-6)
    q = m[1] + m[2] - m[3]
    q /= np.linalg.norm(q)
    sims = m @ q
    ref = [f"w{i}" for i in np.argsort(-sims) if i not in (1, 2, 3)][:5]
    got = kv.most_similar(positive=["w1", "w2"], negative=["w3"], topn=5)
    assert [w for w, _ in got] == ref
    assert got[0][1] == pytest.approx(float(sims[int(ref[0][1:])]), abs=1e-5)
    assert [w for w, _ in kv.most_similar("w7", topn=3)] == [f"w{i}" for i in np.argsort(-(m @ m[7])) if i != 7][:3]
    with pytest.raises(KeyError):
        kv["zz"]
    with pytest.raises(KeyError):
        kv.most_similar("zz")


def test_pos_agreement_counts_matching_tags():
    words = ["a", "b", "c", "d"]
    vecs = np.array([[1, 0], [0.9, 0.1], [0, 1], [0.1, 0.9]], np.float32)
    tags = ({"a": "n", "b": "n", "c": "v", "d": "n"}, ["a", "b", "c", "d"])
    r = pos_agreement(words, vecs, n_words=4, topn=1, tags=tags)
    assert r["pos_agreement_at_1"] == pytest.approx(0.5)  # a<->b agree, c->d and d->c do not


# -- training ---------------------------------------------------------------------------------------
def _toy_corpus(n=600, seed=0):
    """Two topics that never share a sentence: fruit words and machine words."""
    rng = np.random.default_rng(seed)
    a = ["苹果", "香蕉", "橘子", "葡萄", "西瓜", "梨"]
    b = ["电脑", "键盘", "屏幕", "鼠标", "内存", "硬盘"]
    return [list(rng.choice(a if i % 2 else b, size=8)) for i in range(n)]


BACKENDS = ["numba", "torch"]


@pytest.mark.parametrize("backend", ["numba", "numba-exact", "torch"])
@pytest.mark.parametrize("kw", [{"sg": True}, {"sg": False}, {"sg": True, "shared_negatives": False}])
def test_tiny_training_lowers_loss_and_separates_topics(kw, backend):
    cfg = Word2VecConfig(dim=16, window=3, epochs=4, min_count=1, sample=0, batch_size=32, lr=0.05, **kw)
    sigmoid = "table" if backend == "numba" else "exact"  # the numba kernel's default: gensim's table
    backend = backend.split("-")[0]
    kv, s = fit(_toy_corpus(), cfg, device="cpu", progress=False, backend=backend, sigmoid=sigmoid)
    assert s["backend"] == backend and s.get("sigmoid", "exact") == sigmoid
    loss = s["epoch_loss"]
    assert loss == sorted(loss, reverse=True) and loss[-1] < loss[0]
    # an example's loss at the start (zero output vectors): (1 + negative) * log 2 = 4.16
    assert loss[-1] < 0.5 * (1 + cfg.negative) * math.log(2)
    within = kv.similarity("苹果", "香蕉")
    across = kv.similarity("苹果", "电脑")
    assert within > across + 0.3
    assert s["tokens_seen"] == 4 * 600 * 8 and s["steps"] > 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_training_is_deterministic_and_hogwild_runs(backend):
    cfg = Word2VecConfig(dim=8, window=2, epochs=1, min_count=1, batch_size=32)
    a, _ = fit(_toy_corpus(200), cfg, device="cpu", progress=False, backend=backend)
    b, _ = fit(_toy_corpus(200), cfg, device="cpu", progress=False, backend=backend)
    np.testing.assert_array_equal(a.vectors, b.vectors)
    c, s = fit(_toy_corpus(200), cfg, device="cpu", progress=False, workers=2, backend=backend)
    assert s["workers"] == 2 and np.isfinite(c.vectors).all() and s["tokens_seen"] == 200 * 8
    assert not np.array_equal(
        a.vectors,
        fit(
            _toy_corpus(200),
            Word2VecConfig(**{**cfg.__dict__, "seed": 1}),
            device="cpu",
            progress=False,
            backend=backend,
        )[0].vectors,
    )  # the seed matters


@pytest.mark.parametrize("backend", BACKENDS)
def test_time_limit_stops_early(backend):
    # far more epochs than any machine runs in 0.5 s (the numba kernel did 2,000 toy epochs in under 0.5 s in CI)
    cfg = Word2VecConfig(dim=8, window=2, epochs=1_000_000, min_count=1, batch_size=16)
    _, s = fit(_toy_corpus(400), cfg, device="cpu", progress=False, time_limit=0.5, backend=backend)
    assert s["stopped_early"] and len(s["epoch_loss"]) < 1_000_000


def test_backend_choice(monkeypatch):
    from ctxlib.training.word2vec import resolve_backend

    monkeypatch.delenv("CTXLIB_W2V_BACKEND", raising=False)
    assert resolve_backend("auto", "cpu") == "numba" and resolve_backend(None, "cuda") == "torch"
    assert resolve_backend("torch", "cpu") == "torch"
    monkeypatch.setenv("CTXLIB_W2V_BACKEND", "torch")
    assert resolve_backend(None, "cpu") == "torch" and resolve_backend("numba", "cpu") == "numba"
    with pytest.raises(ValueError, match="CPU only"):
        resolve_backend("numba", "cuda")
    with pytest.raises(ValueError, match="unknown"):
        resolve_backend("cython", "cpu")


def test_numba_cache_never_inside_checkpoints(monkeypatch):
    import numba

    from ctxlib.training import sgns_numba

    monkeypatch.setattr(numba.config, "CACHE_DIR", str(checkpoint.CHECKPOINT_DIR / "numba"))
    sgns_numba._cache_outside_checkpoints()
    assert numba.config.CACHE_DIR == ""
    monkeypatch.setattr(numba.config, "CACHE_DIR", "/tmp/somewhere")
    sgns_numba._cache_outside_checkpoints()
    assert numba.config.CACHE_DIR == "/tmp/somewhere"


# -- the numba kernel against a plain Python loop ---------------------------------------------------------
def _lcg(state: int) -> int:
    return (state * 25214903917 + 11) % 2**64  # word2vec.c's generator on 64 bits


def _reference_chunk(w_in, w_out, ids, sid, lo, hi, window, negative, sg, shared, table, lr, state, exp_table=None):
    """word2vec.c's loop, written plainly in float64: returns the new tables, the pair count and the generator state."""
    w_in, w_out = w_in.astype(np.float64), w_out.astype(np.float64)
    pairs = 0

    def draw():
        nonlocal state
        state = _lcg(state)
        return int(table[(state >> 16) % len(table)])

    def sigmoid(f):
        if exp_table is None:
            return _sigmoid(f)
        if abs(f) >= 6:
            return None  # gensim skips the update
        return float(exp_table[int((f + 6) * (len(exp_table) / 12))])

    def example(h, center, negs):
        """h predicts center against negs (one equal to the center is skipped); updates w_out, returns h's error."""
        neu1e = np.zeros(w_in.shape[1])
        for t, label in [(center, 1.0)] + [(t, 0.0) for t in negs if t != center]:
            s = sigmoid(h @ w_out[t])
            if s is None:
                continue
            g = (label - s) * lr
            neu1e += g * w_out[t]
            w_out[t] += g * h
        return neu1e

    for p in range(lo, hi):
        state = _lcg(state)
        e = window - state % window
        ctx = [j for j in range(max(p - e, 0), min(p + e + 1, len(ids))) if j != p and sid[j] == sid[p]]
        if not sg or shared:
            negs = [draw() for _ in range(negative)]
        if sg:
            for j in ctx:
                if not shared:
                    negs = [draw() for _ in range(negative)]
                w_in[ids[j]] += example(w_in[ids[j]].copy(), ids[p], negs)
                pairs += 1
        elif ctx:
            neu1e = example(w_in[ids[ctx]].mean(0), ids[p], negs)
            for j in ctx:
                w_in[ids[j]] += neu1e
            pairs += len(ctx)
    return w_in, w_out, pairs, state


@pytest.mark.parametrize("sigmoid", ["exact", "table"])
@pytest.mark.parametrize("kw", [{"sg": True}, {"sg": False}, {"sg": True, "shared_negatives": False}])
def test_numba_kernel_matches_a_python_loop(kw, sigmoid):
    """The compiled kernel's sequential SGD on a small chunk = the same loop in plain Python (float64), with the same
    windows, negatives (one equal to a center word is skipped) and generator state."""
    from ctxlib.training import sgns_numba

    rng = np.random.default_rng(0)
    V, D = 7, 6
    cfg = Word2VecConfig(dim=D, window=3, negative=3, **kw)
    w_in = ((rng.random((V, D)) - 0.5) * 1.5).astype(np.float32)  # large enough that sigmoids are not all 1/2
    w_out = rng.normal(0, 0.8, (V, D)).astype(np.float32)
    w_out[0] *= 12  # dot products with word 0 often pass +-6, where gensim's table skips the update
    ids = rng.integers(0, V, 14).astype(np.int64)
    sid = np.repeat([0, 1, 2], [6, 1, 7]).astype(np.int64)  # a one-word sentence has no context
    table = np.repeat(np.arange(V), [5, 4, 3, 3, 2, 1, 1]).astype(np.int64)
    exp_table = sgns_numba.sigmoid_table() if sigmoid == "table" else None
    lr, seed = 0.2, 12345
    ref_in, ref_out, ref_pairs, ref_state = _reference_chunk(
        w_in, w_out, ids, sid, 1, 13, cfg.window, cfg.negative, cfg.sg, cfg.shared_negatives, table, lr, seed, exp_table
    )
    worker = sgns_numba.Worker(D, cfg.negative, seed)
    got_in, got_out = w_in.copy(), w_out.copy()
    loss, loss_n, pairs = worker.run(got_in, got_out, ids, sid, 1, 13, cfg, table, lr, exp_table, loss_every=1)
    assert pairs == ref_pairs > 20 and int(worker.rng[0]) == ref_state
    assert (
        loss_n == (pairs if cfg.sg else 12 - 1) and loss > 0
    )  # every position is in the loss; CBOW: one window is empty
    tol = 1e-5 if sigmoid == "exact" else 2e-3  # the table: float32 and float64 dots can fall in neighbouring bins
    assert np.abs(got_in - w_in).max() > 0.05  # the updates are not negligible next to the tolerance
    np.testing.assert_allclose(got_in, ref_in, atol=tol)
    np.testing.assert_allclose(got_out, ref_out, atol=tol)
    if sigmoid == "table":  # the table (and its skips) really was used: the exact sigmoid gives other vectors
        ex_in, *_ = _reference_chunk(
            w_in, w_out, ids, sid, 1, 13, cfg.window, cfg.negative, cfg.sg, cfg.shared_negatives, table, lr, seed
        )
        assert np.abs(ex_in - ref_in).max() > 0.02


# -- the encoder --------------------------------------------------------------------------------------
def test_encoder_type_vector_is_identical_in_every_context(w2v_tiny):
    enc = ctxlib.load(w2v_tiny)
    assert isinstance(enc, Word2VecEncoder) and enc.kind == "word2vec"
    assert enc.layer_names == ["type vector (word2vec)"] and enc.in_vocab("苹果")
    texts = ["我喜欢吃苹果", "苹果手机很好用", "门前有一棵苹果树"]
    v = enc.word_vectors(texts, "苹果")
    assert v.shape == (3, 1, enc.dim) and v.dtype == np.float32
    assert np.abs(v[0]).sum() > 0
    np.testing.assert_array_equal(v[0], v[1])
    np.testing.assert_array_equal(v[0], v[2])
    outs = enc.encode(texts, target="苹果")
    for o in outs:
        i = o.tokens.index("苹果")
        assert o.layers.shape == (1, len(o.tokens), enc.dim) and o.attentions is None
        np.testing.assert_array_equal(o.layers[0, i], enc.keyed_vectors["苹果"])
        assert o.text[o.spans[i][0] : o.spans[i][1]] == "苹果"
    with pytest.raises(WordNotFound):
        enc.word_vectors(["今天天气很好"], "苹果")


def test_encoder_unknown_tokens_get_zero_vectors(w2v_tiny):
    enc = ctxlib.load(w2v_tiny)
    o = enc.encode(["龘靐苹果"], target="龘靐")[0]
    assert o.tokens[0] == "龘靐" and o.known[0] is False and not o.layers[0, 0].any()
    assert not enc.in_vocab("龘靐")


def test_type_vectors_are_the_normalised_table(w2v_tiny):
    enc = ctxlib.load(w2v_tiny)
    words, m = enc.type_vectors(0, max_words=100)
    assert words == enc.keyed_vectors.index_to_key[:100] == enc.vocab_words(100)
    np.testing.assert_allclose(np.linalg.norm(m, axis=1), 1.0, atol=1e-5)
    near = enc.nearest_words(enc.keyed_vectors["中国"], 0, topn=1)
    assert near[0][0] == "中国"
    cfg, _, _ = checkpoint.load(w2v_tiny)
    assert cfg["summary"]["epoch_loss"][-1] < cfg["summary"]["epoch_loss"][0]
    assert cfg["summary"]["tokens_seen"] > 0 and cfg["summary"]["device"] == "cpu"


def test_encoder_rejects_vectors_that_do_not_match_config(w2v_tiny, tmp_path):
    cfg, vocab, sd = checkpoint.load(w2v_tiny)
    checkpoint.save(tmp_path / "bad", "word2vec", cfg["config"], vocab, {"in_vectors": sd["in_vectors"][:, :5]}, {})
    with pytest.raises(checkpoint.CheckpointError, match=r"model\.pt.*python -m ctxlib train word2vec"):
        ctxlib.load(tmp_path / "bad")


def test_shipped_checkpoint_if_present():
    d = checkpoint.CHECKPOINT_DIR / "word2vec"
    if not (d / "config.json").is_file():
        pytest.skip("no shipped checkpoints/word2vec (python -m ctxlib train word2vec)")
    enc = ctxlib.load("word2vec")
    assert enc.dim == 128 and enc.config["sg"] and enc.config["epochs"] >= 5 and enc.config["min_count"] == 5
    assert sum(f.stat().st_size for f in d.iterdir()) <= 15 * 2**20
    assert enc.in_vocab("苹果") and enc.in_vocab("中国")
    assert enc.summary["pos_agreement_at_10"] > 0.3
    assert torch.tensor(enc.keyed_vectors.vectors).isfinite().all() and len(enc.summary["most_similar"]["中国"]) == 5


def test_numpy_reader_matches_torch_and_refuses_other_globals(tmp_path):
    import pickle

    from ctxlib.models.word2vec import read_state_numpy

    sd = {"in_vectors": torch.randn(7, 3), "ids": torch.arange(4)}
    checkpoint.save(tmp_path / "m", "word2vec", {"dim": 3}, {}, sd, {})
    got = read_state_numpy(tmp_path / "m" / "model.pt")
    _, _, ref = checkpoint.load(tmp_path / "m")
    assert got["in_vectors"].dtype == np.float16 and got["ids"].dtype == np.int64
    np.testing.assert_array_equal(got["in_vectors"].astype(np.float32), ref["in_vectors"].numpy())
    np.testing.assert_array_equal(got["ids"], ref["ids"].numpy())
    torch.save({"x": torch.nn.Linear(2, 2)}, tmp_path / "evil.pt")  # a pickled module, not a state dict
    with pytest.raises(pickle.UnpicklingError, match="not allowed"):
        read_state_numpy(tmp_path / "evil.pt")


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


@pytest.mark.parametrize("cap", [0, 3])
def test_skipgram_step_matches_a_numpy_loop(cap):
    """One batched step = the sum of gensim's per-pair updates (computed with the old vectors), row caps applied."""
    from ctxlib.training.sgns import SGNS

    cfg = Word2VecConfig(dim=4, negative=2, max_row_updates=cap)
    m = SGNS(6, cfg, torch.device("cpu"))
    m.w_out.normal_(0, 0.3, generator=torch.Generator().manual_seed(1))
    w_in, w_out = m.w_in.numpy().copy(), m.w_out.numpy().copy()
    center = np.array([0, 1])
    ctx = np.array([[1, 2, 3], [0, 2, 2]])
    valid = np.array([[True, True, False], [True, True, True]])
    neg = np.array([[4, 0], [5, 4]])  # neg 0 == center 0: skipped, as in word2vec.c
    lr = 0.1
    d_in, d_out = np.zeros_like(w_in), np.zeros_like(w_out)
    n_in, n_out = np.zeros(6), np.zeros(6)
    for b in range(2):
        tg = [center[b]] + list(neg[b])
        for j in range(3):
            if not valid[b, j]:
                continue
            n_in[ctx[b, j]] += 1
            for k, t in enumerate(tg):
                n_out[t] += 1
                if k > 0 and t == center[b]:
                    continue
                g = ((k == 0) - _sigmoid(w_in[ctx[b, j]] @ w_out[t])) * lr
                d_in[ctx[b, j]] += g * w_out[t]
                d_out[t] += g * w_in[ctx[b, j]]
    if cap:
        d_in *= np.minimum(1, cap / np.maximum(n_in, 1))[:, None]
        d_out *= np.minimum(1, cap / np.maximum(n_out, 1))[:, None]
    m.step_windows(*(torch.from_numpy(x) for x in (center, ctx, valid, neg)), lr)
    np.testing.assert_allclose(m.w_in.numpy(), w_in + d_in, atol=1e-6)
    np.testing.assert_allclose(m.w_out.numpy(), w_out + d_out, atol=1e-6)

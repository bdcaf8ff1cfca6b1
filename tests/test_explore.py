"""ctxlib.explore's Streamlit-free numbers and files: the atlas curves and the CSV downloads."""

import csv
import io

import numpy as np
import pytest

from ctxlib import explore, explore_atlas


def _mean_pairwise_cosine(X):
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    n = len(U)
    return float(sum(U[i] @ U[j] for i in range(n) for j in range(n) if i != j) / (n * (n - 1)))


def _atlas(vecs, base, layer_names):
    n = len(vecs)
    return explore_atlas.AtlasSample(
        texts=[f"句子{i}" for i in range(n)],
        spans=[(0, 2)] * n,
        tags=[None] * n,
        sources=["pd"] * n,
        total=n,
        vecs=vecs,
        base=base,
        contexts=[[] for _ in range(n)],
        layer_names=layer_names,
    )


def test_self_similarity_is_on_the_word_and_the_baseline_on_the_other_tokens():
    rng = np.random.default_rng(0)
    n, dim = 8, 16
    one = rng.normal(size=dim)
    vecs = np.stack([one + 0.05 * rng.normal(size=(n, dim)), rng.normal(size=(n, dim))], 1)  # (n, 2 layers, dim)
    base = np.stack([rng.normal(size=(n, dim)), one + 0.05 * rng.normal(size=(n, dim))], 1)
    names, selfsim, baseline = explore.self_similarity_curves(_atlas(vecs, base, ["x", "h1"]))
    assert names == ["x", "h1"]
    for j in range(2):
        assert selfsim[j] == pytest.approx(_mean_pairwise_cosine(vecs[:, j]), abs=1e-9)
        assert baseline[j] == pytest.approx(_mean_pairwise_cosine(base[:, j]), abs=0.05)  # sampled pairs
    # the two inputs differ a lot, so a curve computed on the wrong one cannot pass
    assert selfsim[0] > 0.9 and baseline[0] < 0.5 and selfsim[1] < 0.5 and baseline[1] > 0.9


def _read_csv(data: bytes):
    assert data.startswith("\ufeff".encode("utf-8"))
    rows = list(csv.reader(io.StringIO(data.decode("utf-8-sig"))))
    return rows[0], rows[1:]


def _profile(vecs, names):
    n = vecs.shape[0]
    return explore.WordProfile(
        vecs=vecs,
        pooled=[["苹果"]] * n,
        segmentation=["…"] * n,
        type_vec=vecs[0],
        layer_names=names,
        truncated=[False] * n,
        in_vocab=True,
        word_level=True,
    )


def test_vectors_csv_writes_each_sentences_own_vector():
    rng = np.random.default_rng(1)
    texts = ["苹果很好吃", "苹果手机", "他买了苹果"]
    data = {
        "word2vec": _profile(rng.normal(size=(3, 1, 4)), ["type"]),
        "elmo": _profile(rng.normal(size=(3, 2, 6)), ["x", "h1"]),
    }
    header, rows = _read_csv(explore.vectors_csv(data, texts, ["fruit", None, "fruit"], "苹果"))
    assert header[:7] == ["model", "layer", "layer_name", "sentence_no", "sentence", "label", "word"]
    assert header[7:] == [f"d{k}" for k in range(6)]
    assert len(rows) == 3 * 1 + 3 * 2
    seen = set()
    for r in rows:
        m, j, i = r[0], int(r[1]), int(r[3]) - 1
        d = data[m]
        assert r[2] == d.layer_names[j] and r[4] == texts[i] and r[5] == ["fruit", "", "fruit"][i] and r[6] == "苹果"
        np.testing.assert_allclose([float(x) for x in r[7:]], d.vecs[i, j], rtol=1e-5)
        seen.add((m, j, i))
    assert len(seen) == len(rows)


def test_atlas_csv_writes_each_sentences_own_vector():
    rng = np.random.default_rng(2)
    vecs = rng.normal(size=(4, 2, 5))
    d = _atlas(vecs, rng.normal(size=(4, 2, 5)), ["x", "h1"])
    d.spans = [(0, 2), (1, 3), (2, 4), (3, 5)]
    header, rows = _read_csv(explore.atlas_csv(d, 1, ["A", "B", "A", "C"]))
    assert header == ["sentence", "start", "end", "pos_tag", "source", "category", "layer_name"] + [
        f"d{k}" for k in range(5)
    ]
    assert len(rows) == 4
    for i, r in enumerate(rows):
        assert r[:7] == [d.texts[i], str(d.spans[i][0]), str(d.spans[i][1]), "", "pd", "ABAC"[i], "h1"]
        np.testing.assert_allclose([float(x) for x in r[7:]], vecs[i, 1], rtol=1e-5)


# -- issue #17, item 4: the rest of the page logic, each function against numbers worked out here ----------------------


def test_word_profile_pools_the_words_tokens_and_encodes_it_alone():
    import app_fakes

    enc = app_fakes.FakeEncoder("bert", 3, chars=True)
    texts = ["我吃苹果", "苹果手机很好用"]
    d = explore.word_profile(enc, texts, "苹果")
    assert d.vecs.shape == (2, 3, 16) and d.vecs.dtype == np.float32 and d.pooled == [["苹", "果"]] * 2
    for t, v in zip(texts, d.vecs):
        e = enc.encode([t])[0]
        i = e.tokens.index("苹")
        np.testing.assert_allclose(v, e.layers[:, i : i + 2].mean(1), rtol=1e-6)
    alone = enc.encode(["苹果"])[0].layers.mean(1)
    np.testing.assert_allclose(d.type_vec, alone, rtol=1e-6)
    assert d.segmentation == ["我 / 吃 / 【苹】 / 【果】", "【苹】 / 【果】 / 手 / 机 / 很 / 好 / 用"]
    assert d.layer_names == ["embeddings", "layer 1", "layer 2"] and d.truncated == [False, False]
    assert d.in_vocab is True and d.word_level is False
    with pytest.raises(explore.WordNotFound) as err:
        explore.word_profile(enc, ["苹果", "香蕉"], "苹果")
    assert err.value.index == 1 and err.value.text == "香蕉"


def test_word_profile_cache_encodes_only_new_texts_and_gives_the_same_profile():
    import app_fakes

    enc = app_fakes.FakeEncoder("elmo", 3)
    seen = []
    encode = enc.encode
    enc.encode = lambda texts, **kw: (seen.append(list(texts)), encode(texts, **kw))[1]
    cache = {}
    texts = ["我吃苹果", "苹果手机很好用", "他买了苹果"]
    first = explore.word_profile(enc, texts, "苹果", cache=cache)
    assert seen == [texts + ["苹果"]] and len(cache) == 4
    again = explore.word_profile(enc, ["他买了苹果", "苹果是水果", "我吃苹果"], "苹果", cache=cache)
    assert seen[1:] == [["苹果是水果"]]  # one forward for the one new text; the word alone is reused
    plain = explore.word_profile(enc, ["他买了苹果", "苹果是水果", "我吃苹果"], "苹果")
    for f in ("pooled", "segmentation", "layer_names", "truncated", "in_vocab", "word_level"):
        assert getattr(again, f) == getattr(plain, f)
    np.testing.assert_allclose(again.vecs, plain.vecs, rtol=1e-6)
    np.testing.assert_allclose(again.type_vec, first.type_vec, rtol=1e-6)
    np.testing.assert_allclose(first.vecs[0], again.vecs[2], rtol=1e-6)
    with pytest.raises(explore.WordNotFound) as err:  # a cached text before it does not hide the missing word
        explore.word_profile(enc, ["我吃苹果", "香蕉"], "苹果", cache=cache)
    assert err.value.index == 1


def test_find_first_at_edge_and_same_depth():
    assert explore.find_first("我吃苹果和苹果", "苹果") == (2, 4) and explore.find_first("香蕉", "苹果") == (0, 0)
    assert explore.at_edge("苹果很甜", "苹果", "forward") and not explore.at_edge("苹果很甜", "苹果", "backward")
    assert explore.at_edge("我吃苹果 ", "苹果", "backward") and not explore.at_edge("我吃苹果", "苹果", "forward")
    assert explore.at_edge(" 苹果", "苹果", "forward") and not explore.at_edge("香蕉", "苹果", "forward")
    assert [explore.same_depth(j, 3, 5) for j in range(3)] == [0, 2, 4]
    assert [explore.same_depth(j, 5, 3) for j in range(5)] == [0, 1, 1, 2, 2]  # halves round up
    assert explore.same_depth(9, 3, 5) == 4 and explore.same_depth(-2, 3, 5) == 0
    assert explore.same_depth(2, 1, 4) == 3 and explore.same_depth(2, 4, 1) == 0


def test_nearest_rows_skip_the_word_and_format():
    words = ["苹果", "香蕉", "手机", "电脑"]
    M = np.array([[1.0, 0], [0.8, 0.6], [0, 1.0], [-1.0, 0]])
    rows = explore.nearest_rows(words, M, np.array([[2.0, 0.0], [0.0, 0.5]]), "苹果", topn=2)
    assert rows == ["香蕉 0.80  手机 0.00", "手机 1.00  香蕉 0.60"]
    assert explore.nearest_rows(words, M, np.array([[2.0, 0.0]]), "x", topn=5) == [
        "苹果 1.00  香蕉 0.80  手机 0.00  电脑 -1.00"
    ]
    assert explore.nearest_rows(words, M, np.array([[2.0, 0.0]]), "x")[0].count("  ") == 3  # topn's default 5


def test_half_profile_takes_each_layers_half():
    vecs = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
    d = _profile(vecs, ["x", "h1", "h2"])
    d.type_vec = np.arange(12, dtype=np.float32).reshape(3, 4) + 100
    assert explore.half_profile(d, None) is d
    f, b = explore.half_profile(d, "forward"), explore.half_profile(d, "backward")
    np.testing.assert_array_equal(f.vecs, vecs[:, :, :2])
    np.testing.assert_array_equal(b.vecs, vecs[:, :, 2:])
    np.testing.assert_array_equal(f.type_vec, d.type_vec[:, :2])
    np.testing.assert_array_equal(b.type_vec, d.type_vec[:, 2:])
    assert f.layer_names == d.layer_names


def test_scale_rows_type_token_points_and_mean_cosine():
    cols = {k: k.upper() for k in explore.SCALE_COLUMNS}
    rows = explore.scale_rows({"elmo": (0.1234, 0.5, 0.987)}, {"elmo": "layer 2"}, cols)
    assert rows == [{"MODEL": "elmo", "LAYER": "layer 2", "RANDOM_MEAN": 0.12, "RANDOM_P95": 0.5, "NEAREST_TOP1": 0.99}]
    vecs = np.array([[[1.0, 0], [1, 1]], [[0, 1.0], [1, -1]]])  # (2 texts, 2 layers, 2)
    d = _profile(vecs, ["x", "h1"])
    d.type_vec = np.array([[1.0, 0], [1, 0]])
    np.testing.assert_array_equal(explore.type_token_points(d, 1), [[1, 0], [1, 1], [1, -1]])
    assert explore.mean_type_cosine(d, 0) == pytest.approx(0.5)  # cos 1 and cos 0
    assert explore.mean_type_cosine(d, 1) == pytest.approx(1 / np.sqrt(2))


def test_sense_accuracy_keeps_labels_with_two_sentences():
    vecs = np.array([[[1.0, 0]], [[1, 0.1]], [[0, 1.0]], [[0.1, 1]], [[1, 1]], [[5, 5]]])
    d = _profile(vecs, ["x"])
    labels = ["a", "a", "b", "b", "c", None]  # "c" has one sentence, the last none: both left out
    (res, chance) = explore.sense_accuracy({"m": d}, labels)
    assert res == {"m": (["x"], [1.0])} and chance == 0.5
    assert explore.sense_accuracy({"m": d}, ["a", "a", "b", "b", "b", "b"])[1] == pytest.approx(4 / 6)
    assert explore.sense_accuracy({"m": d}, ["a", "a", "b", None, None, None]) is None  # one label with two
    assert explore.sense_accuracy({"m": d}, [None] * 6) is None
    flip = explore.sense_accuracy({"m": d}, ["a", "b", "a", "b", None, None])[0]["m"][1][0]
    assert flip == pytest.approx(0.0)  # the labels decide: crossed labels, every point goes to the other centroid


def test_segmentation_table_groups_models_and_pools_characters():
    a = _profile(np.zeros((2, 1, 2)), ["x"])
    a.segmentation = ["我 / 【苹果】", "【苹果】 / 手机"]
    b = _profile(np.zeros((2, 1, 2)), ["x"])
    b.segmentation = list(a.segmentation)
    c = _profile(np.zeros((2, 1, 2)), ["x"])
    c.segmentation, c.word_level, c.pooled = (
        ["我 / 【苹】 / 【果】", "【苹】 / 【果】 / 手 / 机"],
        False,
        [["苹", "果"]] * 2,
    )
    cols = explore.segmentation_table({"word2vec": a, "elmo": b, "bert": c}, ["我苹果", "苹果手机"], "S", "pooled")
    assert cols == {
        "S": ["我苹果", "苹果手机"],
        "word2vec / elmo": a.segmentation,
        "bert": c.segmentation,
        "bert: pooled": ["苹 + 果", "苹 + 果"],
    }


def test_crop_centres_the_word():
    from ctxlib.corpus import Occurrence

    o = Occurrence("0123456789苹果0123456789", 10, 12, "n", "pd", "train")
    assert explore_atlas._crop(o, 30) is o and explore_atlas._crop(o, 22) is o
    c = explore_atlas._crop(o, 6)
    assert (c.text, c.start, c.end) == ("89苹果01", 2, 4) and c.text[c.start : c.end] == "苹果"
    c = explore_atlas._crop(Occurrence("苹果0123456789", 0, 2, None, "reviews", "train"), 4)
    assert (c.text, c.start, c.end) == ("苹果01", 0, 2)
    c = explore_atlas._crop(Occurrence("0123456789苹果", 10, 12, None, "reviews", "train"), 4)
    assert (c.text, c.start, c.end) == ("89苹果", 2, 4)
    c = explore_atlas._crop(Occurrence("0123456789苹果0123456789", 10, 12, None, "pd", "train"), 7)
    assert c.text[c.start : c.end] == "苹果" and len(c.text) == 7 and c.start == 2


def test_atlas_sample_vectors_and_baseline(monkeypatch):
    import app_fakes

    from ctxlib import corpus
    from ctxlib.corpus import Occurrence

    occ = [
        Occurrence("我吃苹果", 2, 4, "n", "pd", "train"),
        Occurrence("苹果手机很好用", 0, 2, None, "reviews", "train"),
        Occurrence("没有", 0, 0, None, "pd", "train"),
    ]  # an empty span: no token, left out
    monkeypatch.setattr(corpus, "occurrences", lambda word, cap, seed: (occ[:cap], 7))
    enc = app_fakes.FakeEncoder("bert", 3, chars=True)
    d = explore_atlas.atlas_sample(enc, "苹果", cap=3, seed=0)
    assert d.texts == ["我吃苹果", "苹果手机很好用"] and d.spans == [(2, 4), (0, 2)] and d.total == 7
    assert d.tags == ["n", None] and d.sources == ["pd", "reviews"] and d.layer_names == enc.layer_names
    for i, t in enumerate(d.texts):
        e = enc.encode([t])[0]
        np.testing.assert_allclose(
            d.vecs[i],
            e.layers[:, [j for j, (a, b) in enumerate(e.spans) if a < d.spans[i][1] and b > d.spans[i][0]]].mean(1),
            rtol=1e-6,
        )
        others = [e.layers[:, j] for j, (a, b) in enumerate(e.spans) if not (a < d.spans[i][1] and b > d.spans[i][0])]
        assert any(np.allclose(d.base[i], o) for o in others)  # one other token of the same sentence
    assert d.contexts[0] == ["我", "吃"] and d.vecs.dtype == np.float32
    monkeypatch.setattr(corpus, "occurrences", lambda word, cap, seed: ([], 0))
    e = explore_atlas.atlas_sample(enc, "苹果", cap=3)
    assert (
        e.vecs.shape == (0, 3, 16) and e.base.shape == (0, 3, 16) and e.texts == [] and e.layer_names == enc.layer_names
    )


def test_atlas_colouring_tag_accuracy_and_chance():
    rng = np.random.default_rng(0)
    vecs = np.concatenate([rng.normal(size=(6, 1, 4)) + 5, rng.normal(size=(5, 1, 4)) - 5])
    d = _atlas(vecs, vecs, ["x"])
    d.tags = ["n"] * 6 + ["v"] * 5
    d.sources = ["pd"] * 5 + ["reviews"] * 6
    d.contexts = [["吃", "甜"]] * 6 + [["手机", "买"]] * 5
    cats, top = explore.atlas_colouring(d, "kmeans", 0, 2, "苹果", "-", {})
    assert cats == ["C1"] * 6 + ["C2"] * 5 and top == {"C1": ["吃", "甜"], "C2": ["买", "手机"]}
    assert explore.atlas_colouring(d, "source", 0, 2, "苹果", "-", {"pd": "People's Daily"}) == (
        ["People's Daily"] * 5 + ["reviews"] * 6,
        None,
    )
    d.tags[0] = None
    assert explore.atlas_colouring(d, "pos", 0, 2, "苹果", "-", {})[0] == ["-"] + ["n"] * 5 + ["v"] * 5
    acc, majority, counts = explore.atlas_tag_accuracy(d, 0)
    assert acc == 1.0 and majority == 0.5 and counts == {"n": 5, "v": 5}
    assert explore.atlas_tag_accuracy(d, 0, min_count=6) is None  # no tag has six
    d.tags = ["n"] * 6 + ["v"] * 4 + ["a"]
    assert explore.atlas_tag_accuracy(d, 0) is None  # "v" has four: below the default five
    assert explore.atlas_tag_accuracy(d, 0, min_count=4)[2] == {"n": 6, "v": 4}
    assert explore.at_chance([0.5, 0.55], 0.5) and not explore.at_chance([0.5, 0.56], 0.5)
    assert explore.at_chance([], 0.0) and not explore.at_chance([0.7], 0.5, margin=0.1)


def test_chance_diagnosis():
    rows = [
        {"source": "pd", "sense": None, "train": 7},
        {"source": "reviews", "sense": None, "train": 1},
        {"source": "supplement", "sense": "水果", "train": 3},
        {"source": "supplement", "sense": None, "train": 9},
    ]
    out = explore.chance_diagnosis(["甲", "乙", "甲", None, "乙", "乙"], rows)
    assert out == {
        "smallest": ("甲", 2),
        "few": True,
        "corpus": {"pd": 7, "reviews": 1},
        "senses": {"水果": 3},
        "rare": True,
    }
    out = explore.chance_diagnosis(["a"] * 5 + ["b"] * 5, [{"source": "pd", "sense": None, "train": 20}])
    assert out["smallest"] == ("a", 5) and not out["few"] and not out["rare"]
    assert explore.chance_diagnosis(["a"] * 5 + ["b"] * 5, [], min_per_label=6)["few"]
    assert explore.chance_diagnosis([], [])["smallest"] == (None, 0)


def test_accuracy_rows_round():
    assert explore.accuracy_rows({"elmo": (["a", "b"], [0.5, 2 / 3]), "bert": (["c"], [1.0])}) == [
        {"model": "elmo", "layer": "a", "accuracy": 0.5},
        {"model": "elmo", "layer": "b", "accuracy": 0.667},
        {"model": "bert", "layer": "c", "accuracy": 1.0},
    ]


# -- issue #17, item 4, second pass: what the mutation run still found untested ------------------------------------------


def test_same_depth_with_two_layers():
    assert [explore.same_depth(j, 3, 2) for j in range(3)] == [0, 1, 1]  # the top of three is the top of two
    assert [explore.same_depth(j, 2, 3) for j in range(2)] == [0, 2]  # a two-layer model's bottom stays the bottom


def test_nearest_rows_normalise_each_row_by_its_own_length_and_default_to_five():
    words = [chr(0x4E00 + i) for i in range(8)]
    rng = np.random.default_rng(3)
    M = rng.normal(size=(8, 3))
    M /= np.linalg.norm(M, axis=1, keepdims=True)
    vecs = np.array([[3.0, 4.0, 0.0], [0.1, -0.2, 0.05], [10.0, 0.0, -1.0]])  # rows of very different lengths
    rows = explore.nearest_rows(words, M, vecs, words[0])
    for v, row in zip(vecs, rows):
        sims = M @ (v / np.linalg.norm(v))
        want = [(words[i], sims[i]) for i in np.argsort(-sims) if i != 0][:5]
        assert row == "  ".join(f"{w} {s:.2f}" for w, s in want)


def test_kmeans_cluster_labels_are_three_words_without_the_word():
    rng = np.random.default_rng(0)
    vecs = np.concatenate([rng.normal(size=(6, 1, 4)) + 5, rng.normal(size=(6, 1, 4)) - 5])
    d = _atlas(vecs, vecs, ["x"])
    d.contexts = [["苹果", "吃", "甜"]] * 6 + [["手机", "买", "屏幕", "电池"]] * 6  # 苹果 would be a label of the first
    cats, top = explore.atlas_colouring(d, "kmeans", 0, 2, "苹果", "-", {})
    assert sorted(top[cats[0]]) == ["吃", "甜"]  # the word itself left out
    assert len(top[cats[-1]]) == 3 and set(top[cats[-1]]) < {"手机", "买", "屏幕", "电池"}  # three at most


def test_csv_edges_no_models_and_a_tagged_row():
    header, rows = _read_csv(explore.vectors_csv({}, ["苹果"], [None], "苹果"))
    assert header == ["model", "layer", "layer_name", "sentence_no", "sentence", "label", "word"] and rows == []
    d = _atlas(np.ones((2, 1, 2)), np.ones((2, 1, 2)), ["x"])
    d.tags = ["n", None]
    _, rows = _read_csv(explore.atlas_csv(d, 0, ["A", "B"]))
    assert [r[3] for r in rows] == ["n", ""]


def test_chance_diagnosis_ties_missing_counts_and_the_rare_threshold():
    out = explore.chance_diagnosis(["甲", "乙", "甲", "乙", "丙", "丙", "丙"], [])
    assert out["smallest"] == ("乙", 2)  # a tie between 甲 and 乙 (two each): the first label by its text, not by order
    rows = [{"source": "pd", "sense": None}, {"source": "supplement", "sense": "水果"}]  # no "train" count: 0
    out = explore.chance_diagnosis(["a", "a"], rows)
    assert out["corpus"] == {"pd": 0} and out["senses"] == {"水果": 0} and out["rare"]
    rows = [{"source": "pd", "sense": None, "train": 12}, {"source": "supplement", "sense": "水果", "train": 8}]
    assert not explore.chance_diagnosis(["a", "a"], rows)["rare"]  # 12 + 8 = 20 occurrences: not rare
    rows[1]["train"] = 7
    assert explore.chance_diagnosis(["a", "a"], rows)["rare"]


def test_word_profile_of_a_word_model_keeps_the_word_whole_and_reports_its_vocabulary():
    import app_fakes

    from ctxlib.encoder import MAX_CHARS

    enc = app_fakes.FakeEncoder("word2vec", 1)  # word level, one layer: in_vocab depends on the word
    calls = []
    encode = enc.encode
    enc.encode = lambda texts, **kw: (calls.append(kw), encode(texts, **kw))[1]
    d = explore.word_profile(enc, ["我买了苹果手机", "果手" + "x" * MAX_CHARS], "果手")
    assert d.pooled == [["果手"], ["果手"]] and d.word_level is True  # jieba alone would cut 苹果 / 手机
    assert d.truncated == [False, True] and d.in_vocab is ("果手" in enc._vocab)
    assert calls == [{"target": "果手", "batch_size": 64, "attentions": False}]  # vectors only: no attention maps
    word = enc._vocab[1]
    assert explore.word_profile(enc, [f"我说{word}"], word).in_vocab is True
    with pytest.raises(explore.WordNotFound) as err:
        explore.word_profile(enc, ["果手" + "x" * MAX_CHARS, "没有"], "果手")
    assert err.value.word == "果手" and err.value.index == 1


def test_atlas_sample_reads_its_inputs_and_crops_to_the_models_length(monkeypatch):
    import app_fakes

    from ctxlib import corpus
    from ctxlib.corpus import Occurrence

    asked = []
    long = Occurrence("一二三四五六七八九十苹果十九八七六五四三二一", 10, 12, None, "pd", "train")

    def occurrences(word, cap, seed):
        asked.append((word, cap, seed))
        return [long], 1

    monkeypatch.setattr(corpus, "occurrences", occurrences)
    enc = app_fakes.FakeEncoder("bert", 2, chars=True)
    enc.config["max_len"] = 10
    d = explore_atlas.atlas_sample(enc, "苹果", cap=5)
    assert asked == [("苹果", 5, 0)]  # the seed's default is 0
    assert d.texts == ["九十苹果十九"] and d.spans == [(2, 4)]  # max_len - 4 = 6 characters around the word
    explore_atlas.atlas_sample(enc, "苹果", cap=2, seed=4)
    assert asked[-1] == ("苹果", 2, 4)


def test_atlas_baseline_is_seeded_one_other_real_token_or_the_word_alone(monkeypatch):
    import app_fakes

    from ctxlib import corpus
    from ctxlib.corpus import Occurrence

    occ = [
        Occurrence("我吃苹果了吗", 2, 4, None, "pd", "train"),
        Occurrence("没有", 0, 0, None, "pd", "train"),
        Occurrence("苹果", 0, 2, None, "pd", "train"),
        Occurrence("他买苹果吃", 2, 4, None, "pd", "train"),
    ]
    monkeypatch.setattr(corpus, "occurrences", lambda word, cap, seed: (occ, 4))
    enc = app_fakes.FakeGpt(3)  # a [CLS] token of width zero opens every sentence
    calls = []
    encode = enc.encode
    enc.encode = lambda texts, **kw: (calls.append((list(texts), kw)), encode(texts, **kw))[1]
    d = explore_atlas.atlas_sample(enc, "苹果", cap=4, seed=0)
    assert calls == [([o.text for o in occ], {"target": "苹果", "batch_size": 4})]  # one batch for all
    assert d.texts == ["我吃苹果了吗", "苹果", "他买苹果吃"]  # the empty span is skipped, the rest kept
    assert d.base.dtype == np.float32 and d.vecs.dtype == np.float32
    lone = encode(["苹果"])[0]
    np.testing.assert_array_equal(d.base[1], lone.layers[:, 1])  # nothing else in the sentence: the word's first token
    cls_vecs = [encode([t])[0].layers[:, 0] for t in d.texts]
    picked = set()
    for seed in range(12):
        s = explore_atlas.atlas_sample(enc, "苹果", cap=4, seed=seed)
        np.testing.assert_array_equal(s.base, explore_atlas.atlas_sample(enc, "苹果", cap=4, seed=seed).base)  # seeded
        for i in (0, 2):
            assert not np.allclose(s.base[i], cls_vecs[i])  # never the zero-width [CLS]
        picked.add(s.base[0].tobytes())
    assert len(picked) > 1  # the seed does choose among the other tokens
    empty = explore_atlas._atlas_encode(enc, "苹果", [], 0, 0)
    assert empty.vecs.dtype == empty.base.dtype == np.float32 and empty.layer_names == enc.layer_names


def test_atlas_contexts_are_the_other_words_with_the_word_kept_whole(monkeypatch):
    """The cluster labels' context words: the sentence cut with the word kept as one piece, the word left out (cut
    without it, jieba would give 苹果 / 手机 and both would count as context)."""
    import app_fakes

    from ctxlib import corpus
    from ctxlib.corpus import Occurrence

    monkeypatch.setattr(
        corpus,
        "occurrences",
        lambda word, cap, seed: ([Occurrence("我买了苹果手机", 4, 6, None, "reviews", "train")], 1),
    )
    d = explore_atlas.atlas_sample(app_fakes.FakeEncoder("elmo", 2), "果手", cap=1)
    (ctx,) = d.contexts
    assert "机" in ctx and not {"苹果", "手机", "果手"} & set(ctx)

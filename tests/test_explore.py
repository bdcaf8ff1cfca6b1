"""ctxlib.explore's Streamlit-free numbers and files: the atlas curves and the CSV downloads."""
import csv
import io

import numpy as np
import pytest

from ctxlib import explore


def _mean_pairwise_cosine(X):
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    n = len(U)
    return float(sum(U[i] @ U[j] for i in range(n) for j in range(n) if i != j) / (n * (n - 1)))


def _atlas(vecs, base, layer_names):
    n = len(vecs)
    return explore.AtlasSample(texts=[f"句子{i}" for i in range(n)], spans=[(0, 2)] * n, tags=[None] * n,
                               sources=["pd"] * n, total=n, vecs=vecs, base=base, contexts=[[] for _ in range(n)],
                               layer_names=layer_names)


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
    return explore.WordProfile(vecs=vecs, pooled=[["苹果"]] * n, segmentation=["…"] * n, type_vec=vecs[0],
                               layer_names=names, truncated=[False] * n, in_vocab=True, word_level=True)


def test_vectors_csv_writes_each_sentences_own_vector():
    rng = np.random.default_rng(1)
    texts = ["苹果很好吃", "苹果手机", "他买了苹果"]
    data = {"word2vec": _profile(rng.normal(size=(3, 1, 4)), ["type"]),
            "elmo": _profile(rng.normal(size=(3, 2, 6)), ["x", "h1"])}
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
    assert header == ["sentence", "start", "end", "pos_tag", "source", "category", "layer_name"] + [f"d{k}" for k in range(5)]
    assert len(rows) == 4
    for i, r in enumerate(rows):
        assert r[:7] == [d.texts[i], str(d.spans[i][0]), str(d.spans[i][1]), "", "pd", "ABAC"[i], "h1"]
        np.testing.assert_allclose([float(x) for x in r[7:]], vecs[i, 1], rtol=1e-5)

"""ctxlib.triple: the three-sentence margin, ELMo's half split, shared contexts, input checks, held-out ranking per
view, unseen-word classification (tiny real word2vec/ELMo checkpoints and a tiny untrained BERT) and the random-pair
baseline of nearest words."""

import json

import numpy as np
import pytest

from ctxlib import triple
from ctxlib.analysis import pair_ranking
from ctxlib.triple import View


def _cos(a, b):
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


def test_views_split_elmo_bilstm_layers_only():
    assert triple.views("bert", 3) == [View(0), View(1), View(2)]
    assert triple.views("elmo", 3) == [
        View(0),
        View(1),
        View(1, "forward"),
        View(1, "backward"),
        View(2),
        View(2, "forward"),
        View(2, "backward"),
    ]
    assert triple.views("word2vec", 1) == [View(0)]


def test_view_vectors_are_the_halves():
    X = np.arange(2 * 3 * 6, dtype=float).reshape(2, 3, 6)
    np.testing.assert_array_equal(triple.view_vectors(X, View(1)), X[:, 1])
    np.testing.assert_array_equal(triple.view_vectors(X, View(2, "forward")), X[:, 2, :3])
    np.testing.assert_array_equal(triple.view_vectors(X, View(2, "backward")), X[:, 2, 3:])


def test_margins_against_numpy():
    rng = np.random.default_rng(0)
    V = rng.standard_normal((3, 2, 8))
    V[1, 1, :4] = V[0, 1, :4]  # A and B: the same forward half at layer 1 (as when they share the left context)
    rows = {r.view: r for r in triple.margins(V, "elmo")}
    assert set(rows) == {View(0), View(1), View(1, "forward"), View(1, "backward")}
    for v, r in rows.items():
        a, b, c = triple.view_vectors(V, v)
        assert r.cos_ab == pytest.approx(_cos(a, b)) and r.cos_ac == pytest.approx(_cos(a, c))
        assert r.margin == pytest.approx(_cos(a, b) - _cos(a, c))
    assert rows[View(1, "forward")].same_ab and rows[View(1, "forward")].cos_ab == pytest.approx(1.0)
    assert not rows[View(1, "backward")].same_ab and not rows[View(1)].same_ab
    assert triple.best_row(list(rows.values())).margin == max(r.margin for r in rows.values())
    with pytest.raises(ValueError):
        triple.margins(V[:2], "elmo")


def test_word2vec_margin_is_exactly_zero():
    v = np.random.default_rng(1).standard_normal(16)
    (row,) = triple.margins(np.stack([v[None]] * 3), "word2vec")
    assert row.margin == 0.0 and row.same_ab
    assert triple.best_row([row]) is None  # a context-free view is never "the best layer"
    V = np.random.default_rng(2).standard_normal((3, 2, 8))
    V[:, 0] = V[0, 0]  # layer 0 context-free; layer 1 not
    rows = triple.margins(V, "bert")
    assert triple.best_row(rows) is rows[1]


def test_shared_context():
    assert triple.shared_context("苹果真好吃", "苹果很甜", "苹果") == (True, False)  # opens both
    assert triple.shared_context("我吃苹果", "他吃苹果", "苹果") == (False, True)  # closes both
    assert triple.shared_context("我买了苹果电脑", "我买了苹果", "苹果") == (True, False)
    assert triple.shared_context("我吃苹果", "他吃梨", "苹果") == (False, False)


@pytest.mark.parametrize(
    "word,a,b,c,level,msg_id",
    [
        ("苹果", "我吃苹果", "", "苹果手机", "error", "triple.input.fill_in"),
        ("", "我吃苹果", "苹果很甜", "苹果手机", "error", "triple.input.fill_in"),
        ("苹果", "我吃苹果", "香蕉很甜", "苹果手机", "error", "triple.input.word_missing"),
        ("苹果", "我吃苹果", "我吃苹果", "苹果手机", "error", "triple.input.same"),
        ("苹果", "苹果手机", "我吃苹果", "苹果手机", "error", "triple.input.same"),
    ],
)
def test_check_triple_errors(word, a, b, c, level, msg_id):
    _, _, notes = triple.check_triple(word, a, b, c)
    assert [(n.level, n.id) for n in notes] == [(level, msg_id)]


def test_check_triple_names_the_sentences():
    notes = triple.check_triple("苹果", "我吃梨", "香蕉", "苹果手机")[2]
    assert format(notes[0].values["sentences"], ", ") == "A, B"
    assert format(triple.check_triple("苹果", "苹果", "苹果", "苹果")[2][0].values["pairs"], "、") == "A=B、A=C、B=C"


def test_check_triple_windows_long_sentences_and_keeps_html_as_text():
    long = "很" * 4990 + "苹果" + "好" * 8
    word, texts, notes = triple.check_triple(" 苹果 ", long, "<script>alert(1)</script>苹果", "苹果手机")
    assert word == "苹果" and [n.id for n in notes] == ["triple.input.windowed"]
    assert len(texts[0]) == triple.MAX_CHARS and "苹果" in texts[0]
    assert texts[1] == "<script>alert(1)</script>苹果"  # escaping is the page's job; the text is kept as typed


def test_ranking_by_view_is_pair_ranking_of_each_half():
    rng = np.random.default_rng(2)
    V = rng.standard_normal((6, 2, 8))
    labels = ["x", "x", "x", "y", "y", "y"]
    got = triple.ranking_by_view("elmo", {"w": V}, {"w": labels})
    assert got[View(1, "backward")] == pytest.approx(pair_ranking(V[:, 1, 4:], labels))
    assert got[View(1, "forward")] == pytest.approx(pair_ranking(V[:, 1, :4], labels))
    assert got[View(0)] == pytest.approx(pair_ranking(V[:, 0], labels))


def test_stored_ranking(tmp_path):
    f = tmp_path / "eval_senses.json"
    names = ["embeddings", "layer 1"]
    f.write_text(
        json.dumps({"layer_names": names, "sets": {"frozen": {"pair_ranking": [0.51, 0.63]}}}), encoding="utf-8"
    )
    assert triple.stored_ranking(f, names) == {View(0): 0.51, View(1): 0.63}
    assert triple.stored_ranking(f, ["embeddings", "layer 1", "layer 2"]) is None  # another checkpoint's file
    assert triple.stored_ranking(f, names, "supplement") is None
    assert triple.stored_ranking(tmp_path / "missing.json", names) is None
    f.write_text("{not json", encoding="utf-8")
    assert triple.stored_ranking(f, names) is None


def test_random_pair_cosines():
    rng = np.random.default_rng(3)
    mean, p95 = triple.random_pair_cosines(rng.standard_normal((500, 64)))
    assert abs(mean) < 0.03 and 0.1 < p95 < 0.35  # random directions in 64 dimensions: near 0, spread ~1/8
    shifted = rng.standard_normal((500, 64)) + 3.0  # a common direction (anisotropy): unrelated words look similar
    mean2, p952 = triple.random_pair_cosines(shifted)
    assert mean2 > 0.8 and p952 > mean2


# -- unseen words with real (tiny) models ------------------------------------------------------------------------
def test_vocab_status_word2vec(w2v_tiny):
    import ctxlib

    enc = ctxlib.load(w2v_tiny)
    assert triple.vocab_status(enc, "苹果").status == "known"
    assert triple.vocab_status(enc, "元宇宙").status == "missing"


def test_vocab_status_elmo_and_its_forward_half(elmo_tiny, one_thread):
    import ctxlib

    enc = ctxlib.load(elmo_tiny)
    assert triple.vocab_status(enc, "元宇宙").status == "chars"
    assert triple.vocab_status(enc, "的").status == "known"
    # the word opens A and B: the forward half has read the same words (just the word), so it is identical
    V = enc.word_vectors(["发展经济很重要", "发展是硬道理", "经济的发展"], "发展")
    rows = {r.view: r for r in triple.margins(V, "elmo")}
    for j in range(1, V.shape[1]):
        assert rows[View(j, "forward")].same_ab and not rows[View(j, "backward")].same_ab


def test_vocab_status_character_model_names_unk_characters():
    from ctxlib.models.bert import SPECIALS, BertConfig, BertModel, CharTokenizer
    from ctxlib.models.bert_encoder import BertEncoder
    from ctxlib.vocab import Vocab

    tok = CharTokenizer(Vocab(list(SPECIALS) + list("苹果手机宇"), specials=list(SPECIALS), unk="[UNK]"))
    cfg = BertConfig(vocab_size=len(tok), hidden=16, layers=1, heads=2, ffn=32, max_len=16)
    enc = BertEncoder("tiny", {**cfg.__dict__}, {}, None, BertModel(cfg), tok)
    assert triple.vocab_status(enc, "苹果") == triple.VocabStatus("known")
    assert triple.vocab_status(enc, "元宇宙") == triple.VocabStatus("unk_chars", ["元", "宙"])


def test_nearest_top1_and_the_scale_table():
    from ctxlib import explore

    M = np.array([[1, 0], [0.8, 0.6], [0, 1], [-1, 0]], float)
    # each row's most similar other row: 0.8, 0.8, 0.6 (to (0.8, 0.6)), 0 (to (0, 1))
    assert triple.nearest_top1(M, sample=4) == pytest.approx(np.median([0.8, 0.8, 0.6, 0.0]))
    rows = explore.scale_rows(
        {"bert": (0.512, 0.644, 0.851)}, {"bert": "layer 4"}, {k: k.upper() for k in explore.SCALE_COLUMNS}
    )
    assert rows == [
        {"MODEL": "bert", "LAYER": "layer 4", "RANDOM_MEAN": 0.51, "RANDOM_P95": 0.64, "NEAREST_TOP1": 0.85}
    ]


def test_half_profile_and_edges(elmo_tiny, one_thread):
    """ELMo split into halves: where the word opens (closes) a sentence, the forward (backward) half of its token
    vector is exactly the word alone's (the type vector's) half; elsewhere it is not."""
    import ctxlib
    from ctxlib import explore

    texts = ["发展经济很重要", "我们要发展", "经济的发展很快"]
    d = explore.word_profile(ctxlib.load(elmo_tiny), texts, "发展")
    assert explore.half_profile(d, None) is d
    fw, bw = explore.half_profile(d, "forward"), explore.half_profile(d, "backward")
    D = d.vecs.shape[2] // 2
    np.testing.assert_array_equal(fw.vecs, d.vecs[:, :, :D])
    np.testing.assert_array_equal(bw.type_vec, d.type_vec[:, D:])
    assert [explore.at_edge(s, "发展", "forward") for s in texts] == [True, False, False]
    assert [explore.at_edge(s, "发展", "backward") for s in texts] == [False, True, False]
    for j in range(1, d.vecs.shape[1]):
        on_type = [float(_cos(v, fw.type_vec[j])) > triple.SAME for v in fw.vecs[:, j]]
        assert on_type == [True, False, False]
        assert [float(_cos(v, bw.type_vec[j])) > triple.SAME for v in bw.vecs[:, j]] == [False, True, False]

"""The Encoder base class: batching and truncation in encode(), pooling a word's tokens into one vector per layer,
the context-free type vectors and their nearest words, cosine and rank_in, loading by kind. A tiny character
encoder whose vectors are known by construction stands in for a model, so every number is checked exactly."""

import json

import numpy as np
import pytest

import ctxlib
from ctxlib import checkpoint, encoder
from ctxlib.encoder import MAX_CHARS, Encoded, Encoder, WordNotFound
from ctxlib.tokens import char_tokens

DIM = 4


def char_vec(ch: str, layer: int) -> np.ndarray:
    """Layer j of character ch: a fixed vector from its code point, times (j + 1), plus j in every coordinate."""
    c = sum(map(ord, ch))  # a word-level token: the sum of its code points
    return np.array([c % 7 + 1, c % 5 - 2, c % 3, 1.0], np.float32) * (layer + 1) + layer


class CharEncoder(Encoder):
    """One token per character, three layers (no context: a character's vector is the same everywhere)."""

    kind = "chars"
    word_level = False

    def __init__(self, vocab=("苹果", "香蕉", "手机", "电脑", "水果")):
        super().__init__("chars", {"dim": DIM}, {})
        self.vocab, self.batches = list(vocab), []

    @property
    def layer_names(self):
        return ["embeddings", "layer 1", "layer 2"]

    def tokenize(self, text, target):
        return char_tokens(text)

    def vocab_words(self, max_words=10000):
        return self.vocab[:max_words]

    def encode_tokens(self, batch, texts):
        self.batches.append(list(texts))
        out = []
        for toks, text in zip(batch, texts):
            layers = np.array([[char_vec(t, j) for t, _, _ in toks] for j in range(3)], np.float32).reshape(
                3, len(toks), DIM
            )
            out.append(Encoded(text, [t for t, _, _ in toks], [(a, b) for _, a, b in toks], layers, self.layer_names))
        return out


def pooled(word: str) -> np.ndarray:
    """(3, DIM): the mean of the word's characters' vectors at each layer, computed here."""
    return np.array([np.mean([char_vec(c, j) for c in word], 0) for j in range(3)])


def test_word_vectors_mean_pool_the_words_tokens_at_every_layer():
    enc = CharEncoder()
    texts = ["我吃苹果", "苹果手机很好用", "一个大苹果"]
    vecs, toks = enc.word_vectors_with_tokens(texts, "苹果")
    assert vecs.shape == (3, 3, DIM) and vecs.dtype == np.float32
    assert toks == [["苹", "果"]] * 3
    for v in vecs:
        np.testing.assert_allclose(v, pooled("苹果"), rtol=1e-6)
    assert not np.allclose(pooled("苹果")[0], char_vec("苹", 0))  # pooling both characters is not the first one
    np.testing.assert_array_equal(enc.word_vectors(texts, "苹果"), vecs)


def test_occurrence_picks_the_nth_and_falls_back_to_the_last():
    enc = CharEncoder()
    e = enc.encode(["苹果和苹果"])[0]
    assert (
        e.word_indices("苹果") == [0, 1] and e.word_indices("苹果", 1) == [3, 4] and e.word_indices("苹果", 7) == [3, 4]
    )
    assert e.word_indices("香蕉") == [] and e.token_indices(1, 4) == [1, 2, 3]
    _, toks = enc.word_vectors_with_tokens(["苹果和苹果树"], "苹果", occurrence=1)
    assert toks == [["苹", "果"]]


def test_missing_word_names_the_sentence():
    enc = CharEncoder()
    with pytest.raises(WordNotFound) as err:
        enc.word_vectors(["苹果很甜", "香蕉很甜", "梨"], "苹果")
    assert err.value.index == 1 and err.value.word == "苹果" and err.value.text == "香蕉很甜"
    assert str(err.value) == "'苹果' does not occur in sentence 2 ('香蕉很甜')."
    long = "香" * 50
    assert str(WordNotFound("苹果", 0, long)) == f"'苹果' does not occur in sentence 1 ({long[:40] + '…'!r})."
    with pytest.raises(WordNotFound):  # the word lies past what encode() reads
        enc.word_vectors(["香" * MAX_CHARS + "苹果"], "苹果")


def test_encode_batches_in_order_and_marks_truncation():
    enc = CharEncoder()
    texts = ["苹果", "香蕉", "手机", "电脑", "水果"]
    out = enc.encode(texts, batch_size=2)
    assert [e.text for e in out] == texts and enc.batches == [texts[0:2], texts[2:4], texts[4:5]]
    assert not any(e.truncated for e in out)
    long = "苹" * (MAX_CHARS + 1)
    (e,) = enc.encode([long])
    assert e.truncated and len(e.tokens) == MAX_CHARS
    assert not enc.encode(["苹" * MAX_CHARS])[0].truncated
    with pytest.raises(TypeError):
        enc.encode("苹果")


def test_type_matrix_pools_each_word_alone_as_unit_vectors_and_is_cached():
    enc = CharEncoder()
    words, M = enc.type_matrix()
    assert words == enc.vocab and M.shape == (5, 3, DIM)
    for w, m in zip(words, M):
        p = pooled(w)
        np.testing.assert_allclose(m, p / np.linalg.norm(p, axis=1, keepdims=True), rtol=1e-5)
    assert enc.type_matrix() is enc.type_matrix()
    n = len(enc.batches)
    enc.type_matrix()
    assert len(enc.batches) == n  # cached
    w2, M2 = enc.type_matrix(2)
    assert w2 == enc.vocab[:2] and M2.shape == (2, 3, DIM)
    wl, V = enc.type_vectors(2)
    np.testing.assert_array_equal(V, M[:, 2])


def test_nearest_words_rank_by_cosine_and_skip_excluded():
    enc = CharEncoder()
    q = pooled("手机")[1] * 3.0  # length does not matter
    sims = {w: float(np.dot(q, pooled(w)[1]) / np.linalg.norm(q) / np.linalg.norm(pooled(w)[1])) for w in enc.vocab}
    want = sorted(sims, key=lambda w: -sims[w])
    got = enc.nearest_words(q, 1, topn=3)
    assert [w for w, _ in got] == want[:3] and got[0][0] == "手机"
    assert [s for _, s in got] == pytest.approx([sims[w] for w in want[:3]], abs=1e-5)
    got = enc.nearest_words(q, 1, topn=2, exclude=("手机",))
    assert [w for w, _ in got] == [w for w in want if w != "手机"][:2]
    assert len(enc.nearest_words(q, 1, topn=10)) == 5


def test_cosine_and_rank_in():
    assert ctxlib.cosine(np.array([1.0, 0]), np.array([0.0, 0])) == 0.0
    assert ctxlib.cosine(np.array([0.0, 0]), np.array([1.0, 0])) == 0.0
    assert ctxlib.cosine(np.array([3.0, 4]), np.array([4.0, 3])) == pytest.approx(24 / 25)
    assert ctxlib.cosine(np.array([1.0, 1]), np.array([-2.0, -2])) == pytest.approx(-1)
    p = np.array([0.1, 0.4, 0.4, 0.05, 0.05])
    assert encoder.rank_in(p, 1) == (1, pytest.approx(0.4)) and encoder.rank_in(p, 2)[0] == 1  # ties share a rank
    assert encoder.rank_in(p, 0) == (3, pytest.approx(0.1)) and encoder.rank_in(p, 4)[0] == 4
    for bad in (-1, 5):
        with pytest.raises(ValueError, match="outside a probability vector"):
            encoder.rank_in(p, bad)
    with pytest.raises(ValueError):
        encoder.rank_in(np.ones((2, 2)), 0)


def test_defaults_info_and_base_methods():
    enc = CharEncoder()
    assert enc.dim == DIM and enc.max_len == 10**6 and enc.in_vocab("anything")
    assert Encoder("x", {"hidden": 8, "max_len": 64}, {}).dim == 8 and Encoder("x", {"max_len": 64}, {}).max_len == 64
    assert Encoder("x", {}, {}).dim == 0
    info = enc.info()
    assert info == {
        "name": "chars",
        "kind": "chars",
        "layers": enc.layer_names,
        "dim": DIM,
        "config": {"dim": DIM},
        "summary": {},
        "path": None,
    }
    base = Encoder("x", {}, {})
    for call in (lambda: base.layer_names, lambda: base.vocab_words(), lambda: base.encode_tokens([], [])):
        with pytest.raises(NotImplementedError):
            call()
    assert [t for t, _, _ in base.tokenize("我吃苹果", "苹果")][-1] == "苹果"  # word models keep the target whole


def test_load_by_kind_and_unknown_kind(tmp_path):
    d = tmp_path / "odd"
    d.mkdir()
    (d / "config.json").write_text(json.dumps({"kind": "lstm9", "config": {}}), encoding="utf-8")
    with pytest.raises(
        checkpoint.CheckpointError,
        match=r"unknown model kind 'lstm9' \(expected one of \['word2vec', "
        r"'elmo', 'bert', 'gpt'\]\)",
    ):
        encoder.load(d)
    with pytest.raises(checkpoint.CheckpointError, match="No checkpoint"):
        encoder.load(tmp_path / "none")


def test_load_picks_the_class_of_the_kind():
    from ctxlib.models.word2vec import Word2VecEncoder

    d = checkpoint.CHECKPOINT_DIR / "word2vec"
    if not (d / "config.json").is_file():
        pytest.skip("checkpoints/word2vec missing: python -m ctxlib train word2vec")
    enc = encoder.load(d)
    assert isinstance(enc, Word2VecEncoder) and enc.path == d


class PosEncoder(CharEncoder):
    """Layer j of token i: (i + 1) * 10**-j in every coordinate, so pooling shows which tokens were taken; it reads
    at most `keep` tokens (a model's max length); optionally wraps the text in [CLS] ... [SEP] (vectors (5, 0, 0, 0))."""

    def __init__(self, keep=10**6, specials=False, vocab=("苹果", "香蕉", "手机", "电脑", "水果", "东西")):
        super().__init__(vocab)
        self.keep, self.specials = keep, specials

    def encode_tokens(self, batch, texts):
        out = []
        for toks, text in zip(batch, texts):
            toks = list(toks)[: self.keep]
            if self.specials:
                toks = [("[CLS]", 0, 0)] + toks + [("[SEP]", len(text), len(text))]
            layers = np.array(
                [
                    [
                        [(i + 1) * 10.0**-j] * DIM if t[0] not in ("[CLS]", "[SEP]") else [5.0] + [0.0] * (DIM - 1)
                        for i, t in enumerate(toks)
                    ]
                    for j in range(3)
                ],
                np.float32,
            )
            out.append(Encoded(text, [t for t, _, _ in toks], [(a, b) for _, a, b in toks], layers, self.layer_names))
        return out


def test_occurrence_default_and_choice_reach_the_pooling():
    enc = PosEncoder()
    v = enc.word_vectors(["苹果和苹果"], "苹果")  # tokens 0, 1 (values 1, 2), then 3, 4 (values 4, 5)
    np.testing.assert_allclose(v[0, 0], [1.5] * DIM)
    np.testing.assert_allclose(enc.word_vectors(["苹果和苹果"], "苹果", occurrence=1)[0, 0], [4.5] * DIM)
    np.testing.assert_allclose(enc.word_vectors(["苹果和苹果"], "苹果", 1)[0, 2], [0.045] * DIM, rtol=1e-5)
    np.testing.assert_allclose(
        enc.word_vectors_with_tokens(["苹果和苹果"], "苹果")[0][0, 0], [1.5] * DIM
    )  # default: first


def test_word_past_the_models_length_is_not_found():
    enc = PosEncoder(keep=5)
    with pytest.raises(WordNotFound) as err:
        enc.word_vectors(["苹果", "一二三四五六苹果"], "苹果")
    assert (err.value.word, err.value.index, err.value.text) == ("苹果", 1, "一二三四五六苹果")


def test_type_matrix_leaves_specials_out_in_float32_unit_rows_for_any_vocabulary_size():
    words = [chr(0x4E00 + i) + chr(0x4E00 + 300 + i) for i in range(300)]  # more than one chunk of 256
    enc = PosEncoder(specials=True, vocab=words)
    got, M = enc.type_matrix()
    assert got == words and M.shape == (300, 3, DIM) and M.dtype == np.float32
    # the word's own two tokens are positions 1, 2 ([CLS] is 0): every row is the unit vector of (1.5, ..) * 10**-j
    np.testing.assert_allclose(M, np.full((300, 3, DIM), 1 / np.sqrt(DIM)), rtol=1e-5)
    raw = PosEncoder(specials=True, vocab=["苹果"]).encode(["苹果"])[0].layers
    with_specials = raw.mean(1) / np.linalg.norm(raw.mean(1), axis=1, keepdims=True)
    assert not np.allclose(with_specials, M[0], atol=1e-3)  # pooling the specials too would point elsewhere
    empty = PosEncoder(vocab=[])
    w, M0 = empty.type_matrix()
    assert w == [] and M0.shape == (0, 3, DIM)


def test_small_vectors_are_normalised_too():
    enc = PosEncoder()
    _, M = enc.type_matrix()
    assert float(np.linalg.norm(M[0, 2])) == pytest.approx(1.0)  # layer 2's raw norm is 0.03
    q = np.full(DIM, 1e-3)
    (w, s), *_ = enc.nearest_words(q, 2)
    assert s == pytest.approx(1.0, abs=1e-6)
    assert len(enc.nearest_words(q, 2)) == 5  # topn's default


def test_word_models_keep_the_target_whole_through_encode_and_word_vectors():
    """Word-level models (the base tokenize: jieba) keep the target span as one token, however jieba would cut it."""

    class Words(CharEncoder):
        word_level = True
        tokenize = Encoder.tokenize

    enc = Words()
    plain = [t for t in enc.encode(["我买了苹果手机"])[0].tokens]
    assert "果手" not in plain
    assert "果手" in enc.encode(["我买了苹果手机"], target="果手")[0].tokens
    _, toks = enc.word_vectors_with_tokens(["我买了苹果手机"], "果手")
    assert toks == [["果手"]]


def test_messages_and_defaults_of_the_small_parts():
    assert str(WordNotFound("苹果", 0, "香" * 40)) == f"'苹果' does not occur in sentence 1 ({'香' * 40!r})."
    assert str(WordNotFound("苹果", 0, "香" * 41)) == f"'苹果' does not occur in sentence 1 ({'香' * 40 + '…'!r})."
    oov = encoder.OutOfVocabulary("龘", "word2vec")
    assert (oov.word, oov.model, oov.args) == ("龘", "word2vec", ("龘",))
    assert str(oov) == "'龘' is not in the word2vec vocabulary (it has no vector for unseen words)."
    enc = CharEncoder(vocab=[])
    enc.encode(["苹"] * 33)
    assert [len(b) for b in enc.batches] == [32, 1]  # batch_size's default
    with pytest.raises(TypeError, match=r"^encode\(\) takes a list of texts$"):
        enc.encode("苹果")
    from pathlib import Path

    enc.path = Path("/somewhere/chars")
    assert enc.info()["path"] == "/somewhere/chars"


def test_unknown_kind_message_names_the_file(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"kind": "lstm9", "config": {}}), encoding="utf-8")
    with pytest.raises(checkpoint.CheckpointError) as err:
        encoder.load(tmp_path)
    assert str(err.value).startswith(f"{tmp_path / 'config.json'}: unknown model kind 'lstm9'")


# -- the type matrix on disk (ctxlib.cache), for a loaded checkpoint; the defaults that reach it ------------------------
def _checkpoint_folder(tmp_path, name="chars"):
    d = tmp_path / "ckpt" / name
    d.mkdir(parents=True)
    (d / "config.json").write_text(json.dumps({"kind": "chars", "config": {"dim": DIM}}), encoding="utf-8")
    (d / "model.pt").write_bytes(b"weights v1")
    return d


def test_type_matrix_on_disk_is_per_checkpoint_model_and_size(tmp_path, monkeypatch):
    monkeypatch.setenv("CTXLAB_CACHE", str(tmp_path / "cache"))
    d = _checkpoint_folder(tmp_path)

    def at(path, cls=CharEncoder, name="chars"):
        enc = cls()
        enc.path, enc.name = path, name
        return enc

    first = at(d)
    words, M = first.type_matrix(3)
    assert first.batches and len(list((tmp_path / "cache" / "type_matrix").glob("*.npz"))) == 1
    fresh = at(d)  # a new process: read from disk, nothing encoded
    w2, M2 = fresh.type_matrix(3)
    assert not fresh.batches and w2 == words == first.vocab[:3] and np.array_equal(M, M2) and M2.dtype == np.float32
    # another size, another model name or kind at the same folder, a retrained checkpoint: computed afresh
    smaller = at(d)
    assert smaller.type_matrix(2)[0] == first.vocab[:2] and smaller.batches
    renamed = at(d, name="chars-2")
    renamed.type_matrix(3)
    assert renamed.batches

    class OtherKind(CharEncoder):
        kind = "chars-b"

    other = at(d, OtherKind)
    other.type_matrix(3)
    assert other.batches
    (d / "model.pt").write_bytes(b"retrained weights")
    retrained = at(d)
    retrained.type_matrix(3)
    assert retrained.batches
    assert len(list((tmp_path / "cache" / "type_matrix").glob("*.npz"))) == 5
    nowhere = at(None)  # no checkpoint folder: computed, nothing stored
    nowhere.type_matrix(4)
    assert nowhere.batches and len(list((tmp_path / "cache" / "type_matrix").glob("*.npz"))) == 5


def test_type_matrix_encodes_256_words_a_batch_and_defaults_to_10000_words():
    enc = CharEncoder(vocab=[chr(0x4E00 + i) for i in range(300)])
    enc.type_matrix()
    assert [len(b) for b in enc.batches] == [256, 44]

    class Sizes(CharEncoder):
        def _type_matrix(self, max_words):
            self.asked = getattr(self, "asked", []) + [max_words]
            return super()._type_matrix(max_words)

    enc = Sizes()
    enc.type_matrix()
    enc.type_vectors(1)
    enc.nearest_words(np.ones(DIM), 0)
    assert enc.asked == [10000]  # one matrix, of the default size, serves all three
    enc.type_vectors(0, 2)
    assert enc.asked == [10000, 2]

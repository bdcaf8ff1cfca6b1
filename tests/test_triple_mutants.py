"""ctxlib/triple.py cases the other triple tests left open (found by bench/mutation.sh's `triple` scope): the notes'
placeholders render in both languages, the noise band's disk cache is keyed by what changes it, the vocabulary
scale on tiny and degenerate matrices, the held-out ranking skips a word the model cannot read, and the verdict and
stored-ranking edges."""

import json
import logging

import numpy as np
import pytest

from ctxlib import triple
from ctxlib.app import i18n
from ctxlib.triple import MarginRow, View

# -- check_triple: what the page shows from each note


def _rendered(notes) -> list[str]:
    return [i18n.lookup(n.id, lang, **n.values) for n in notes for lang in ("en", "zh")]


def test_every_note_renders_its_values_in_both_languages():
    long = "很" * 200 + "苹果" + "好" * 10
    _, _, missing = triple.check_triple("苹果", "我吃梨", "苹果很甜", "香蕉")
    assert missing[0].level == "error" and "'苹果'" in _rendered(missing)[0] and "A, C" in _rendered(missing)[0]
    _, _, cut = triple.check_triple("苹果", "我吃苹果", long, long + "。")
    assert [(n.level, n.id) for n in cut] == [("info", "triple.input.windowed")]
    en = _rendered(cut)[0]
    assert en.startswith("Sentence B, C is longer than 120 characters") and "、" in _rendered(cut)[1]


def test_a_sentence_of_exactly_max_chars_is_kept_whole():
    s = "苹果" + "好" * (triple.MAX_CHARS - 2)
    _, texts, notes = triple.check_triple("苹果", s, "我吃苹果", "苹果手机")
    assert texts[0] == s and notes == []


def test_a_long_sentence_with_the_word_twice_is_cut_around_the_first():
    s = "苹果" + "好" * 300 + "苹果" + "好" * 300
    _, texts, notes = triple.check_triple("苹果", s, "我吃苹果", "苹果手机")
    assert texts[0] == s[: triple.MAX_CHARS] and [n.id for n in notes] == ["triple.input.windowed"]


# -- the noise band's disk cache


class _Enc:
    """A stand-in encoder: vectors that depend on the texts and the word (so each set and kind gives its own band)."""

    def __init__(self, kind="bert", path=None, language=None, bad=()):
        self.kind, self.path, self.calls, self.words, self.bad = kind, path, 0, [], set(bad)
        if language:
            self.language = language

    def word_vectors(self, texts, word):
        self.calls += 1
        self.words.append(word)
        if word in self.bad:
            raise KeyError(word)
        assert all(word in t for t in texts)  # the set's word, found in each sentence
        seed = sum(map(ord, "".join(texts) + word + self.kind))
        V = np.random.default_rng(seed).standard_normal((len(texts), 3, 8))
        V[:, 0] = 1.0
        return V


def _ckpt(tmp_path, name="ckpt", kind="bert"):
    d = tmp_path / name
    d.mkdir()
    (d / "config.json").write_text(json.dumps({"kind": kind, "name": name}), encoding="utf-8")
    return d


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("CTXLAB_CACHE", str(tmp_path / "cache"))


def test_noise_band_cache_is_per_checkpoint_and_quantile(tmp_path, cache_dir):
    a, b = _ckpt(tmp_path, "a"), _ckpt(tmp_path, "b")
    band_a = triple.example_noise(_Enc(path=a))
    fresh = _Enc(path=b)
    assert triple.example_noise(fresh) == pytest.approx(band_a) and fresh.calls > 0  # computed, not a's file
    wide = _Enc(path=a)
    assert triple.example_noise(wide, q=0.5)[View(1)] < band_a[View(1)] and wide.calls > 0


def test_noise_band_cache_is_per_kind_and_keeps_elmo_halves(tmp_path, cache_dir):
    ck = _ckpt(tmp_path)
    bert = triple.example_noise(_Enc("bert", ck))
    elmo_enc = _Enc("elmo", ck)
    elmo = triple.example_noise(elmo_enc)
    assert elmo_enc.calls > 0 and View(1, "forward") in elmo and View(1, "forward") not in bert
    again = _Enc("elmo", ck)
    assert triple.example_noise(again) == pytest.approx(elmo) and again.calls == 0  # halves read back from disk


def test_noise_band_cache_follows_the_example_sets(tmp_path, cache_dir, monkeypatch):
    from ctxlib import examples

    ck = _ckpt(tmp_path)
    triple.example_noise(_Enc(path=ck))
    fewer = dict(list(examples.sets_for("zh").items())[:2])
    monkeypatch.setattr(examples, "sets_for", lambda lang: fewer)
    enc = _Enc(path=ck)
    triple.example_noise(enc)
    assert enc.calls == 2  # new sets: computed again, not read from the old entry


def test_an_english_model_gets_the_english_sets_and_an_encoder_without_path_works(cache_dir):
    from ctxlib.examples import sets_for

    en = _Enc(language="en")
    del en.path
    triple.example_noise(en)
    assert en.words == [ex["word"] for ex in sets_for("en").values()]
    zh = _Enc()
    triple.example_noise(zh)
    assert zh.words == [ex["word"] for ex in sets_for("zh").values()]


def test_a_skipped_set_is_logged_by_name(cache_dir, caplog):
    from ctxlib.examples import sets_for

    name, ex = next(iter(sets_for("zh").items()))
    with caplog.at_level(logging.INFO, logger="ctxlib.triple"):
        triple.example_noise(_Enc(bad={ex["word"]}))
    assert f"noise band of bert: set {name} skipped: '{ex['word']}'" in caplog.messages


# -- the vocabulary scale


def test_random_pair_cosines_on_two_rows_and_on_one():
    M = np.array([[1.0, 0.0], [0.6, 0.8]])
    assert triple.random_pair_cosines(M) == pytest.approx((0.6, 0.6))
    assert all(np.isnan(triple.random_pair_cosines(M[:1])))
    assert np.isnan(triple.nearest_top1(M[:1])) and triple.nearest_top1(M) == pytest.approx(0.6)


def test_random_pair_cosines_samples_every_row_and_never_a_row_with_itself():
    """Rows 0 and 1 equal, row 2 orthogonal: over ordered pairs of distinct rows the mean cosine is 1/3."""
    M = np.array([[1.0, 0.0], [2.0, 0.0], [0.0, 1.0]])
    mean, _ = triple.random_pair_cosines(M)
    assert mean == pytest.approx(1 / 3, abs=0.03)


def test_random_pair_p95_is_the_95th_percentile_of_all_pairs():
    X = np.random.default_rng(5).standard_normal((60, 8))
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    S = U @ U.T
    c = S[~np.eye(60, dtype=bool)]
    mean, p95 = triple.random_pair_cosines(X, pairs=400_000)
    assert mean == pytest.approx(c.mean(), abs=0.005)
    assert abs(p95 - np.percentile(c, 95)) < abs(np.percentile(c, 96) - np.percentile(c, 95)) / 2


def test_the_scale_is_the_same_on_every_call():
    M = np.random.default_rng(1).standard_normal((500, 8))
    assert triple.random_pair_cosines(M) == triple.random_pair_cosines(M)
    assert triple.nearest_top1(M) == triple.nearest_top1(M)


# -- held-out ranking, stored ranking, verdict


def test_heldout_ranking_skips_a_word_the_model_cannot_read(monkeypatch):
    from ctxlib.encoder import WordNotFound
    from ctxlib.evaluation import heldout

    sets = {  # the unreadable word first: the words after it still count
        "长": [("很长", "long"), ("好长", "long"), ("校长", "head"), ("长大", "head")],
        "苹果": [("我吃苹果", "fruit"), ("苹果很甜", "fruit"), ("苹果手机", "phone"), ("苹果公司", "phone")],
    }
    monkeypatch.setattr(heldout, "sense_sets", lambda name: sets if name == "frozen" else {})

    class Enc:
        kind = "elmo"

        def word_vectors(self, texts, word):
            if word == "长":
                raise WordNotFound(word, 0, texts[0])
            return np.random.default_rng(len(word)).standard_normal((len(texts), 2, 6))

    got = triple.heldout_ranking(Enc())
    V = Enc().word_vectors([t for t, _ in sets["苹果"]], "苹果")
    want = triple.ranking_by_view("elmo", {"苹果": V}, {"苹果": ["fruit", "fruit", "phone", "phone"]})
    assert got == pytest.approx(want) and View(1, "backward") in got
    assert triple.heldout_ranking(Enc(), "other") == {}


def test_stored_ranking_of_fewer_layers_than_the_model_is_refused(tmp_path):
    f = tmp_path / "eval_senses.json"
    names = ["embeddings", "layer 1", "layer 2"]
    f.write_text(json.dumps({"layer_names": names, "sets": {"frozen": {"pair_ranking": [0.5, 0.6]}}}))
    assert triple.stored_ranking(f, names) is None


def test_margins_refuse_other_than_three_sentences():
    with pytest.raises(ValueError, match=r"got \(2, 3, 4\)"):
        triple.margins(np.zeros((2, 3, 4)), "bert")


def test_a_margin_exactly_at_the_band_is_unclear_and_the_verdict_names_the_band():
    row = MarginRow(View(1), 0.75, 0.5)  # margin 0.25, exactly representable
    v = triple.verdict([row], {View(1): 0.25})
    assert (v.outcome, v.band) == ("unclear", 0.25)
    assert triple.verdict([row], {View(1): 0.2}).outcome == "same"


def test_null_margins_keep_each_sense_apart_and_handle_no_sentences():
    X = np.random.default_rng(2).standard_normal((7, 5))
    labels = ["a", "a", "a", "b", "b", "b", "c"]
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    S = U @ U.T
    want = [
        S[i, j] - S[i, k]
        for i in range(7)
        for j in range(7)
        for k in range(7)
        if len({i, j, k}) == 3 and labels[i] == labels[j] == labels[k]
    ]
    assert sorted(triple.null_margins(X, labels)) == pytest.approx(sorted(want))
    assert len(triple.null_margins(np.zeros((0, 5)), [])) == 0


class _Encoded:
    def __init__(self, tokens, known):
        self.tokens, self.known = tokens, known

    def word_indices(self, word):
        return [j for j, t in enumerate(self.tokens) if t == word]


class _WordEnc:
    """A word model that keeps `target` whole (as Encoder.encode does) and otherwise reads characters."""

    word_level = True

    def __init__(self, vocab, flags=True):
        self.vocab, self.flags = set(vocab), flags

    def in_vocab(self, word):
        return True

    def encode(self, texts, target=None):
        toks = [target] if target else list(texts[0])
        return [_Encoded(toks, [t in self.vocab for t in toks] if self.flags else None)]


def test_vocab_status_reads_the_word_kept_whole():
    assert triple.vocab_status(_WordEnc({"元宇宙"}), "元宇宙") == triple.VocabStatus("known")
    assert triple.vocab_status(_WordEnc({"元"}), "元宇宙") == triple.VocabStatus("chars")


def test_vocab_status_without_known_flags_is_known():
    assert triple.vocab_status(_WordEnc(set(), flags=False), "元宇宙") == triple.VocabStatus("known")


def test_vocab_status_checks_every_token_when_the_word_is_no_token():
    class CharEnc(_WordEnc):
        word_level = False

        def encode(self, texts, target=None):
            toks = list(texts[0])  # a character model: the word is never one token
            return [_Encoded(toks, [t in self.vocab for t in toks])]

    assert triple.vocab_status(CharEnc({"元", "宙"}), "元宇宙") == triple.VocabStatus("unk_chars", ["宇"])
    assert triple.vocab_status(CharEnc(set("元宇宙")), "元宇宙") == triple.VocabStatus("known")
